/* log: one-line diagnostics written with a single write(2) from a stack buffer.
 * Safe in the preloaded runtime: no malloc, no stdio streams. "%m" is expanded
 * from the errno current at the call. */
#ifndef COMEX_LOG_H
#define COMEX_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Messages above this level are dropped; default LOG_INFO. Not synchronised:
 * set it once at start-up. */
extern int log_threshold;

/* Prefix for every line ("comex-memnode", "comex"); must stay valid forever. */
void log_set_prefix(const char *prefix);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_threshold >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif

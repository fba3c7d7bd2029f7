/* rtfd: the runtime's file descriptors (its own and UCX's). Each is moved,
 * as soon as runtime code makes it, to the top of the program's range (just
 * below RLIMIT_NOFILE, as CRIU keeps its service descriptors), made
 * close-on-exec and recorded here, so the program's own descriptors get the
 * numbers they would get without comex and its closes pass over ours
 * (interpose_fd.c; docs/DECISIONS.md D47). */
#ifndef COMEX_RT_RTFD_H
#define COMEX_RT_RTFD_H

#include <stdbool.h>

/* Descriptors are below fs.nr_open, whose default and usual setting this is */
#define RTFD_MAX (1 << 20)

/* Moves fd (just made by runtime code) up and records it. Returns the new
 * number, with fd closed; fd itself, recorded and close-on-exec, when no
 * room is left up there (logged once); a negative fd unchanged. errno is
 * preserved, so `return rtfd_adopt(open(...))` keeps a failed call's. */
int rtfd_adopt(int fd);
/* Whether fd is one of the runtime's: one relaxed load, no system call. */
bool rtfd_owned(int fd);
/* The runtime is about to close fd: it is no longer the runtime's. */
void rtfd_forget(int fd);
/* The lowest runtime descriptor in [from, to], or -1. */
int rtfd_next(unsigned from, unsigned to);
/* Around a call that makes a descriptor at the lowest free number: while
 * runtime code makes one, the program makes none, and the other way round,
 * so that the runtime's passing number is never the one a program's call
 * gets instead (close(0); open() must give 0). Each side waits a bounded
 * time for the other (a program call may be blocked on a fault the waiting
 * runtime thread serves). Returns what rtfd_gate_leave takes. */
int rtfd_gate_enter(bool runtime);
void rtfd_gate_leave(int token);

#endif

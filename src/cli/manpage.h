/* manpage: the man pages comex(1), comex-run(1) and comex-memnode(8) in roff,
 * generated like docs/OPTIONS.md from the one options table and the command
 * table (commands.h): `comex help-options --man PAGE`. */
#ifndef COMEX_MANPAGE_H
#define COMEX_MANPAGE_H

#include <stdio.h>

/* Writes PAGE ("comex", "comex-run" or "comex-memnode") to f; -EINVAL
 * (logged) for another name. */
int manpage_write(FILE *f, const char *page, const char *version);

#endif

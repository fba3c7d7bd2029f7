/* check: an operator's end-to-end self-test of a memnode deployment. Writes
 * pages to every configured memnode through the client library, reads them
 * back, verifies every byte and prints what each memnode reports. */
#ifndef COMEX_CHECK_H
#define COMEX_CHECK_H

#include <stdint.h>

struct options;

/* Returns 0 when every page came back intact, else a negative errno. */
int check_main(const struct options *o, uint32_t pages);

#endif

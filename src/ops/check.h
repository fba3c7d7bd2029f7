/* check: an operator's tools for a memnode deployment. check writes pages to
 * every configured memnode through the client library, reads them back,
 * verifies every byte and prints what each memnode reports; drain asks a
 * memnode to leave without losing its clients' pages. */
#ifndef COMEX_CHECK_H
#define COMEX_CHECK_H

#include <stdint.h>

struct options;

/* Returns 0 when every page came back intact, else a negative errno. */
int check_main(const struct options *o, uint32_t pages);
/* comex drain: asks the one memnode in o to drain and prints its answer. */
int drain_main(const struct options *o);

#endif

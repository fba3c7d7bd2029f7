/* swap: `comex swap up`, `down` and `status` (docs/SWAP.md): the swap
 * device's daemon started and stopped, its loop device, mkswap and swapon. */
#ifndef COMEX_SWAP_CLI_H
#define COMEX_SWAP_CLI_H

#include <stdbool.h>

struct options;

/* Starts a daemon serving a device of option size, attaches it, swaps on
 * it and prints the device path last; exit status (0, 1 failed, 2 refused). */
int swap_up(const struct options *o);
/* Swaps off the device (a loop device path, or the name up gave it),
 * detaches it and waits for its daemon to give its frames back. */
int swap_down(const struct options *o, const char *device);
/* One line (or a JSON array) per device of swap-dir. */
int swap_status(const struct options *o, bool json);

#endif

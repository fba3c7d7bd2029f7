/* check: the assertion every test program uses; a failed CHECK names the
 * file, line and condition on stderr and exits 1 (a failed test). */
#ifndef COMEX_TEST_CHECK_H
#define COMEX_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                               \
	do {                                                                                      \
		if (!(cond)) {                                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                                  \
		}                                                                                 \
	} while (0)

#endif

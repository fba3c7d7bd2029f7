/* backup: option backup-dir, Infiniswap's disk backup (seed 001 §4.2). Every
 * write buffer that goes to a memnode is also written, by a writer thread,
 * to a sparse file in backup-dir at the page's offset; the buffer is not
 * reused (its pages stay in it) until that write is done. A page whose
 * remote copies are gone is read back from the file, checked by its hash. */
#ifndef COMEX_RT_BACKUP_H
#define COMEX_RT_BACKUP_H

#include <stdbool.h>
#include <stdint.h>

struct wbuf;

/* Creates the file (unlinked at once) in dir; 0 and nothing when dir is "". */
int backup_init(const char *dir);
bool backup_on(void);
/* The writer thread's body; never returns. */
void *backup_writer(void *arg);
/* Under the pager lock: wb's pages (those not cancelled by now) go to the
 * file; backup_wait returns once they are there (at once if wb was not
 * submitted). */
void backup_submit(struct wbuf *wb);
void backup_wait(struct wbuf *wb);
/* Page idx from the file into dst if the file holds the page's content
 * (its hash matches); false otherwise. Counts pages_backup_read. */
bool backup_read(uint64_t idx, char *dst);

#endif

/* pagecrypt: AES-256-GCM for pages that leave the compute node (option
 * encrypt, OpenSSL libcrypto). The key comes from getrandom() in this process
 * and is never sent anywhere; every seal uses a fresh 96-bit IV (a counter)
 * and authenticates the frame's (node, pfn), so a memnode can neither read a
 * page nor hand back altered bytes, another frame's page or an older copy of
 * this one without open() failing. Not thread-safe (the client's lock). */
#ifndef COMEX_PAGECRYPT_H
#define COMEX_PAGECRYPT_H

#include <stdint.h>

#define PAGECRYPT_PAGE 4096u

/* What the compute node keeps per remote frame: 24 bytes. */
struct pagecrypt_meta { uint64_t iv; uint8_t tag[16]; };

struct pagecrypt;

int pagecrypt_create(struct pagecrypt **out);
void pagecrypt_destroy(struct pagecrypt *pc);
/* Encrypts one page from in to out for frame (node, pfn); *meta is what open() needs. */
int pagecrypt_seal(struct pagecrypt *pc, uint32_t node, uint32_t pfn, const void *in, void *out,
		   struct pagecrypt_meta *meta);
/* Decrypts one page in place; -EBADMSG if it is not what seal() produced for
 * this frame with this meta. */
int pagecrypt_open(struct pagecrypt *pc, uint32_t node, uint32_t pfn, void *page, const struct pagecrypt_meta *meta);

#endif

/* One EVP context, made at creation and re-keyed per call with only a new
 * IV (EVP_*Init_ex with a NULL cipher and key keeps both), so sealing and
 * opening allocate nothing: they run on the pager's fault path. */
#include "pagecrypt.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"

struct pagecrypt {
	EVP_CIPHER_CTX *enc, *dec;
	uint64_t next_iv;   /* never repeats under this key: 2^64 seals */
	uint32_t salt;      /* the IV's other 32 bits, random per process */
};

static void make_iv(const struct pagecrypt *pc, uint64_t ctr, uint8_t iv[12])
{
	memcpy(iv, &pc->salt, 4);
	memcpy(iv + 4, &ctr, 8);
}

static void make_aad(uint32_t node, uint32_t pfn, uint8_t aad[8])
{
	memcpy(aad, &node, 4);
	memcpy(aad + 4, &pfn, 4);
}

int pagecrypt_create(struct pagecrypt **out)
{
	struct pagecrypt *pc = calloc(1, sizeof(*pc));
	uint8_t key[32];
	int err = -ENOMEM;

	if (!pc)
		return -ENOMEM;
	if (getrandom(key, sizeof(key), 0) != sizeof(key) || getrandom(&pc->salt, 4, 0) != 4) {
		log_error("encrypt: cannot draw a key from getrandom(): %m");
		err = -EIO;
		goto cleanup;
	}
	pc->enc = EVP_CIPHER_CTX_new();
	pc->dec = EVP_CIPHER_CTX_new();
	if (!pc->enc || !pc->dec || !EVP_EncryptInit_ex(pc->enc, EVP_aes_256_gcm(), NULL, key, NULL) ||
	    !EVP_DecryptInit_ex(pc->dec, EVP_aes_256_gcm(), NULL, key, NULL)) {
		log_error("encrypt: OpenSSL has no usable AES-256-GCM");
		err = -ENOTSUP;
		goto cleanup;
	}
	explicit_bzero(key, sizeof(key));
	*out = pc;
	return 0;

cleanup:
	explicit_bzero(key, sizeof(key));
	pagecrypt_destroy(pc);
	return err;
}

void pagecrypt_destroy(struct pagecrypt *pc)
{
	if (!pc)
		return;
	EVP_CIPHER_CTX_free(pc->enc);
	EVP_CIPHER_CTX_free(pc->dec);
	free(pc);
}

int pagecrypt_seal(struct pagecrypt *pc, uint32_t node, uint32_t pfn, const void *in, void *out,
		   struct pagecrypt_meta *meta)
{
	uint8_t iv[12], aad[8];
	uint64_t ctr = ++pc->next_iv;
	int n, fin;

	make_iv(pc, ctr, iv);
	make_aad(node, pfn, aad);
	if (!EVP_EncryptInit_ex(pc->enc, NULL, NULL, NULL, iv) || !EVP_EncryptUpdate(pc->enc, NULL, &n, aad, 8) ||
	    !EVP_EncryptUpdate(pc->enc, out, &n, in, PAGECRYPT_PAGE) || n != PAGECRYPT_PAGE ||
	    !EVP_EncryptFinal_ex(pc->enc, (uint8_t *)out + n, &fin) ||
	    !EVP_CIPHER_CTX_ctrl(pc->enc, EVP_CTRL_GCM_GET_TAG, 16, meta->tag))
		return -EIO;
	meta->iv = ctr;
	return 0;
}

int pagecrypt_open(struct pagecrypt *pc, uint32_t node, uint32_t pfn, void *page, const struct pagecrypt_meta *meta)
{
	uint8_t iv[12], aad[8], tag[16];
	int n, fin;

	if (!meta->iv) /* never sealed: nothing can be authentic */
		return -EBADMSG;
	make_iv(pc, meta->iv, iv);
	make_aad(node, pfn, aad);
	memcpy(tag, meta->tag, 16);
	if (!EVP_DecryptInit_ex(pc->dec, NULL, NULL, NULL, iv) || !EVP_DecryptUpdate(pc->dec, NULL, &n, aad, 8) ||
	    !EVP_DecryptUpdate(pc->dec, page, &n, page, PAGECRYPT_PAGE) || n != PAGECRYPT_PAGE ||
	    !EVP_CIPHER_CTX_ctrl(pc->dec, EVP_CTRL_GCM_SET_TAG, 16, tag))
		return -EIO;
	return EVP_DecryptFinal_ex(pc->dec, (uint8_t *)page + n, &fin) > 0 ? 0 : -EBADMSG;
}

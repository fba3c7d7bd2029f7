/* One EVP context, made at creation and re-keyed per call with only a new
 * IV (EVP_*Init_ex with a NULL cipher and key keeps both), so sealing and
 * opening allocate nothing: they run on the pager's fault path. libcrypto
 * is loaded by the first create, so that a process without option encrypt
 * does not load it (docs/DECISIONS.md D80). */
#include "pagecrypt.h"

#include <dlfcn.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define LIBCRYPTO "libcrypto.so." STR(OPENSSL_SHLIB_VERSION) /* the one built against */

#define OSSL_FUNCS(X)                                                                          \
	X(EVP_CIPHER_CTX_new) X(EVP_CIPHER_CTX_free) X(EVP_CIPHER_CTX_ctrl) X(EVP_aes_256_gcm) \
	X(EVP_EncryptInit_ex) X(EVP_EncryptUpdate) X(EVP_EncryptFinal_ex)                      \
	X(EVP_DecryptInit_ex) X(EVP_DecryptUpdate) X(EVP_DecryptFinal_ex)

/* libcrypto's functions, set once by ossl_load (under its lock) before any
 * pagecrypt exists, read-only after */
static struct {
#define FIELD(f) __typeof__(f) *f;
	OSSL_FUNCS(FIELD)
#undef FIELD
} C;

static int ossl_load(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static bool loaded;
	void *h;
	int err = 0;

	pthread_mutex_lock(&lock);
	if (loaded)
		goto unlock;
	if (!(h = dlopen(LIBCRYPTO, RTLD_NOW | RTLD_LOCAL))) {
		log_error("encrypt: cannot load OpenSSL's %s: %s", LIBCRYPTO, dlerror());
		err = -ENOTSUP;
		goto unlock;
	}
#define LOAD(f) if (!(C.f = (__typeof__(f) *)dlsym(h, #f))) err = -ENOTSUP;
	OSSL_FUNCS(LOAD)
#undef LOAD
	if (err)
		log_error("encrypt: %s lacks a function of AES-256-GCM's", LIBCRYPTO);
	loaded = !err;
unlock:
	pthread_mutex_unlock(&lock);
	return err;
}

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
	if ((err = ossl_load()))
		goto cleanup;
	if (getrandom(key, sizeof(key), 0) != sizeof(key) || getrandom(&pc->salt, 4, 0) != 4) {
		log_error("encrypt: cannot draw a key from getrandom(): %m");
		err = -EIO;
		goto cleanup;
	}
	pc->enc = C.EVP_CIPHER_CTX_new();
	pc->dec = C.EVP_CIPHER_CTX_new();
	if (!pc->enc || !pc->dec || !C.EVP_EncryptInit_ex(pc->enc, C.EVP_aes_256_gcm(), NULL, key, NULL) ||
	    !C.EVP_DecryptInit_ex(pc->dec, C.EVP_aes_256_gcm(), NULL, key, NULL)) {
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
	if (pc->enc)
		C.EVP_CIPHER_CTX_free(pc->enc);
	if (pc->dec)
		C.EVP_CIPHER_CTX_free(pc->dec);
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
	if (!C.EVP_EncryptInit_ex(pc->enc, NULL, NULL, NULL, iv) || !C.EVP_EncryptUpdate(pc->enc, NULL, &n, aad, 8) ||
	    !C.EVP_EncryptUpdate(pc->enc, out, &n, in, PAGECRYPT_PAGE) || n != PAGECRYPT_PAGE ||
	    !C.EVP_EncryptFinal_ex(pc->enc, (uint8_t *)out + n, &fin) ||
	    !C.EVP_CIPHER_CTX_ctrl(pc->enc, EVP_CTRL_GCM_GET_TAG, 16, meta->tag))
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
	if (!C.EVP_DecryptInit_ex(pc->dec, NULL, NULL, NULL, iv) || !C.EVP_DecryptUpdate(pc->dec, NULL, &n, aad, 8) ||
	    !C.EVP_DecryptUpdate(pc->dec, page, &n, page, PAGECRYPT_PAGE) || n != PAGECRYPT_PAGE ||
	    !C.EVP_CIPHER_CTX_ctrl(pc->dec, EVP_CTRL_GCM_SET_TAG, 16, tag))
		return -EIO;
	return C.EVP_DecryptFinal_ex(pc->dec, (uint8_t *)page + n, &fin) > 0 ? 0 : -EBADMSG;
}

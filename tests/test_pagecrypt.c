/* pagecrypt: sealed pages open only for their own frame and latest seal; altered, swapped, replayed or never-sealed ones are refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagecrypt.h"
#include "testing.h"

static uint8_t plain[PAGECRYPT_PAGE], sealed[PAGECRYPT_PAGE], older[PAGECRYPT_PAGE], page[PAGECRYPT_PAGE];

int main(void)
{
	struct pagecrypt *pc, *other;
	struct pagecrypt_meta m, m_old, none = { 0 };

	for (unsigned i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 31 + 7);
	CHECK(pagecrypt_create(&pc) == 0 && pagecrypt_create(&other) == 0);

	/* round trip; the memnode never sees the plain text */
	CHECK(pagecrypt_seal(pc, 2, 100, plain, sealed, &m) == 0);
	CHECK(memcmp(sealed, plain, sizeof(plain)) != 0);
	CHECK(memmem(sealed, sizeof(sealed), plain, 64) == NULL);
	memcpy(page, sealed, sizeof(page));
	CHECK(pagecrypt_open(pc, 2, 100, page, &m) == 0 && memcmp(page, plain, sizeof(plain)) == 0);

	/* a flipped bit anywhere, or a flipped tag bit */
	for (unsigned off = 0; off < sizeof(page); off += 1021) {
		memcpy(page, sealed, sizeof(page));
		page[off] ^= 0x10;
		CHECK(pagecrypt_open(pc, 2, 100, page, &m) == -EBADMSG);
	}
	memcpy(page, sealed, sizeof(page));
	m_old = m;
	m_old.tag[5] ^= 1;
	CHECK(pagecrypt_open(pc, 2, 100, page, &m_old) == -EBADMSG);

	/* another frame's page, on this node or another */
	memcpy(page, sealed, sizeof(page));
	CHECK(pagecrypt_open(pc, 2, 101, page, &m) == -EBADMSG);
	memcpy(page, sealed, sizeof(page));
	CHECK(pagecrypt_open(pc, 3, 100, page, &m) == -EBADMSG);

	/* a new seal of the same page differs (fresh IV); the older copy no longer opens */
	memcpy(older, sealed, sizeof(older));
	CHECK(pagecrypt_seal(pc, 2, 100, plain, sealed, &m) == 0);
	CHECK(memcmp(older, sealed, sizeof(sealed)) != 0);
	memcpy(page, older, sizeof(page));
	CHECK(pagecrypt_open(pc, 2, 100, page, &m) == -EBADMSG);

	/* another process's key, and a frame never sealed */
	memcpy(page, sealed, sizeof(page));
	CHECK(pagecrypt_open(other, 2, 100, page, &m) == -EBADMSG);
	CHECK(pagecrypt_open(pc, 2, 100, page, &none) == -EBADMSG);

	pagecrypt_destroy(pc);
	pagecrypt_destroy(other);
	printf("test_pagecrypt: ok\n");
	return 0;
}

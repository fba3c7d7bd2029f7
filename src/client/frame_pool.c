/* Chunks are kept oldest first: taking from the head and adding at the tail
 * hands out frames in the order the memnode granted them, so consecutive
 * takes return adjacent PFNs until a chunk runs out. */
#include "frame_pool.h"

#include <errno.h>
#include <string.h>

void frame_pool_init(struct frame_pool *fp)
{
	memset(fp, 0, sizeof(*fp));
}

int frame_pool_add(struct frame_pool *fp, uint32_t pfn, uint32_t count)
{
	uint32_t tail;

	if (!count)
		return -EINVAL;
	if (fp->nchunks) {
		tail = (fp->head + fp->nchunks - 1) % FRAME_POOL_MAX_CHUNKS;
		if (fp->chunk[tail].pfn + fp->chunk[tail].count == pfn) {
			fp->chunk[tail].count += count;
			fp->frames += count;
			return 0;
		}
	}
	if (fp->nchunks == FRAME_POOL_MAX_CHUNKS)
		return -ENOSPC;
	tail = (fp->head + fp->nchunks) % FRAME_POOL_MAX_CHUNKS;
	fp->chunk[tail].pfn = pfn;
	fp->chunk[tail].count = count;
	fp->nchunks++;
	fp->frames += count;
	return 0;
}

int frame_pool_take(struct frame_pool *fp, uint32_t want, uint32_t *pfn_out, uint32_t *count_out)
{
	uint32_t got;

	if (!fp->nchunks || !want)
		return -ENOENT;
	got = fp->chunk[fp->head].count < want ? fp->chunk[fp->head].count : want;
	*pfn_out = fp->chunk[fp->head].pfn;
	*count_out = got;
	fp->chunk[fp->head].pfn += got;
	fp->chunk[fp->head].count -= got;
	fp->frames -= got;
	if (!fp->chunk[fp->head].count) {
		fp->head = (fp->head + 1) % FRAME_POOL_MAX_CHUNKS;
		fp->nchunks--;
	}
	return 0;
}

/* init-fat.c - libFuzzer target for the init's FAT/exFAT block-map arithmetic (initramfs/init/store_image.c, util.c): a
 * boot sector (512 bytes: the cluster size), the file's size (8 bytes), the block size (2), then the device block
 * of each cluster (2 bytes each, 0 a hole; past them the map cannot be asked). Whether the file is one run of
 * blocks is checked against a walk of its own in exact arithmetic. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "store.h"
#include "util.h"

struct map {
	const unsigned char *base; /* 2 bytes per cluster */
	size_t n;
	unsigned long long cb; /* blocks per cluster */
};

static int map_block(void *ctx, unsigned long long blk, unsigned long long *phys)
{
	const struct map *m = ctx;
	unsigned long long i = blk / m->cb;

	if (i >= m->n) {
		errno = ERANGE;
		return -1;
	}
	*phys = le16(m->base + 2 * i) ? le16(m->base + 2 * i) * m->cb + blk % m->cb : 0;
	return 0;
}

/* Both ends of every step of the file (every block when the step is no whole number of blocks) map to start + k. */
static int one_run(unsigned long long bytes, unsigned long long step, unsigned bsz, struct map *m,
		   unsigned long long *start)
{
	unsigned __int128 nblk, f, l, cb;
	unsigned long long phys;

	if (!bytes || !bsz || map_block(m, 0, start) != 0 || *start == 0)
		return -1;
	cb = step >= bsz && step % bsz == 0 ? step / bsz : 1;
	nblk = ((unsigned __int128)bytes + bsz - 1) / bsz;
	for (f = 0; f < nblk; f += cb) {
		l = f + cb - 1 < nblk - 1 ? f + cb - 1 : nblk - 1;
		if (map_block(m, (unsigned long long)f, &phys) != 0 || phys != *start + f ||
		    map_block(m, (unsigned long long)l, &phys) != 0 || phys != *start + l)
			return -1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long long step, bytes, first = 0, start;
	const char *fstype;
	unsigned char *boot, *base;
	unsigned bsz;
	size_t wlen = size % 61;
	char *why;
	struct map m;
	int r;

	if (size < 522)
		return 0;
	boot = malloc(512); /* exact sizes: ASan sees any overread */
	base = malloc(size - 522 ? size - 522 : 1);
	why = malloc(wlen ? wlen : 1);
	if (!boot || !base || !why)
		abort();
	memcpy(boot, data, 512);
	memcpy(base, data + 522, size - 522);
	/* live.iso='s filesystem sniffing reads the same kind of sector (and the ext superblock past it) */
	fstype = disk_fs_type(boot, 512);
	if (fstype && strcmp(fstype, "vfat") != 0 && strcmp(fstype, "exfat") != 0 && strcmp(fstype, "ntfs3") != 0)
		abort();
	step = store_fat_cluster_bytes(boot);
	if (memcmp(boot + 3, "EXFAT   ", 8) == 0 ? step > 1ULL << 37 || (step & (step - 1)) : step > 65535ULL * 255)
		abort();
	bytes = le64(data + 512);
	bsz = le16(data + 520);
	m.base = base;
	m.n = (size - 522) / 2;
	m.cb = bsz && step >= bsz && step % bsz == 0 ? step / bsz : 1;
	r = block_run(bytes, step, bsz, map_block, &m, &first, why, wlen);
	if (r != one_run(bytes, step, bsz, &m, &start) || (r == 0 && first != start))
		abort();
	if (r != 0 && wlen && !memchr(why, 0, wlen))
		abort();
	fstype = disk_fs_type(base, size - 522); /* any length: ASan sees a read past it */
	if (fstype && strcmp(fstype, "ext4") == 0 && (size - 522 < 1024 + 0x3a || le16(base + 1024 + 0x38) != 0xEF53))
		abort();
	free(boot);
	free(base);
	free(why);
	return 0;
}

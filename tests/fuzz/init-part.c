/* init-part.c - libFuzzer target for the init's MBR/GPT reader (initramfs/init/disk.c): byte 0 picks the logical
 * block size (512 << its low two bits; bit 2: any size, from bytes 3-6), bytes 1-2 the partition number, and the
 * rest is the disk: its MBR, the GPT header at the block size, the entries where the header says. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"

#define HEAD 7

struct disk {
	const unsigned char *b;
	size_t len;
};

static int read_entry(void *ctx, unsigned long long at, unsigned char e[128])
{
	const struct disk *d = ctx;

	if (at > d->len || d->len - at < 128)
		return -1;
	memcpy(e, d->b + at, 128);
	return 0;
}

/* The entry's offset against the exact sum: within an off_t, or refused. */
static void check_offset(const unsigned char *g, unsigned long lbs, unsigned long partn)
{
	unsigned long long at;
	unsigned __int128 want;

	if (gpt_entry_offset(g, lbs, partn, &at) != 0)
		return;
	want = (unsigned __int128)le64(g + 72) * lbs + (unsigned __int128)(partn - 1) * le32(g + 84);
	if (partn == 0 || partn > le32(g + 80) || le32(g + 84) < 128 || want > INT64_MAX || at != want)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long lbs, partn;
	unsigned char *img;
	size_t olen;
	char *out;
	struct disk d;
	int r;

	if (size < HEAD + 512)
		return 0;
	lbs = data[0] & 4 ? le32(data + 3) : 512UL << (data[0] & 3);
	partn = le16(data + 1);
	olen = data[0] & 8 ? (size_t)(data[0] >> 4) : 40; /* 40 holds a GUID; shorter ones must be cut, not overrun */
	d.len = size - HEAD;
	img = malloc(d.len); /* exact sizes: ASan sees any overread */
	out = malloc(olen ? olen : 1);
	if (!img || !out)
		abort();
	memcpy(img, data + HEAD, d.len);
	d.b = img;
	r = part_uuid_from(img, lbs <= d.len - 512 ? img + lbs : NULL, lbs, partn, read_entry, &d, out, olen);
	if (r == 0 && olen && !memchr(out, 0, olen))
		abort();
	if (r == 0 && olen == 40 && strlen(out) != 36 && (strlen(out) < 11 || out[8] != '-'))
		abort();
	check_offset(img, lbs, partn); /* any header bytes, any block size */
	if (lbs <= d.len - 512)
		check_offset(img + lbs, lbs, partn);
	free(img);
	free(out);
	return 0;
}

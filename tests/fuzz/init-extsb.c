/* init-extsb.c - libFuzzer target for the init's ext2/3/4 superblock reader (initramfs/init/store_find.c): the 1024
 * bytes at byte 1024 of a device. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "disk.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct sb none;
	unsigned char *b;
	struct sb s;
	size_t i;

	if (size < 1024)
		return 0;
	b = malloc(1024); /* exact size: ASan sees any overread */
	if (!b)
		abort();
	memcpy(b, data, 1024);
	memset(&s, 0xA5, sizeof(s));
	store_sb_parse(b, &s);
	if (!s.ext && memcmp(&s, &none, sizeof(s)) != 0) /* not ext: nothing else said */
		abort();
	if (s.ext) {
		if (le16(b + 0x38) != 0xEF53 || (s.recover != 0 && s.recover != 1) || (s.errors != 0 && s.errors != 1))
			abort();
		/* the label is the field up to its first NUL; the UUID 36 characters, hyphens where blkid puts them */
		if (!memchr(s.label, 0, sizeof(s.label)) || strncmp(s.label, (const char *)b + 0x78, 16) != 0 ||
		    strlen(s.uuid) != 36)
			abort();
		for (i = 0; i < 36; i++)
			if (i == 8 || i == 13 || i == 18 || i == 23 ? s.uuid[i] != '-' :
								      !isxdigit((unsigned char)s.uuid[i]))
				abort();
	}
	free(b);
	return 0;
}

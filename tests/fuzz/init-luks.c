/* init-luks.c - libFuzzer target for the init's LUKS2 header reader (initramfs/init/luks.c): the first bytes of a
 * device that may be an encrypted persistence store. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "luks.h"

static int printable(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct luks_id none;
	unsigned char *b = malloc(size ? size : 1); /* exact size: ASan sees any overread */
	struct luks_id id;
	int r;

	if (!b)
		abort();
	memcpy(b, data, size);
	memset(&id, 0xA5, sizeof(id));
	r = luks_id_parse(b, size, &id);
	if (r != 0 && r != -1)
		abort();
	if (r == -1 && memcmp(&id, &none, sizeof(id)) != 0) /* not LUKS2: nothing else said */
		abort();
	if (r == 0 && (size < 512 || memcmp(b, "LUKS\xba\xbe\x00\x02", 8) != 0 || !printable(id.label, 48) ||
		       !printable(id.uuid, 40)))
		abort();
	/* the label is the field up to its NUL, each byte as it is or '?' for one that is not printable */
	for (size_t i = 0; r == 0 && id.label[i]; i++)
		if (b[24 + i] == 0 ||
		    (id.label[i] != (char)b[24 + i] && (id.label[i] != '?' || (b[24 + i] >= 0x20 && b[24 + i] < 0x7f))))
			abort();
	free(b);
	return 0;
}

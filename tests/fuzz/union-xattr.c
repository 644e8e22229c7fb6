/* union-xattr.c - libFuzzer target for the overlay xattr and whiteout parsing
 * (liveunion/lib/union_xattr.c). The first byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "union.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[64];
	struct stat st;
	size_t pos = 0;
	const char *nm;
	char *copy;

	if (size < 1)
		return 0;
	copy = malloc(size - 1 ? size - 1 : 1); /* exact size: ASan sees any overread */
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	switch (data[0] % 5) {
	case 0:
		if (lu_parse_redirect(copy, size - 1, out, sizeof out) >= 0 && strlen(out) >= sizeof out)
			abort();
		break;
	case 1: (void)lu_parse_opaque(copy, size - 1); break;
	case 2:
		while ((nm = lu_xattr_list_next(copy, size - 1, &pos)))
			if (pos > size - 1 || nm < copy || nm >= copy + (size - 1))
				abort();
		break;
	case 3: (void)lu_xattr_is_private(copy, size - 1, data[0] >> 4); break;
	default:
		memset(&st, 0, sizeof st);
		if (size >= 9) {
			st.st_mode = (mode_t)(data[1] | data[2] << 8 | (uint32_t)data[3] << 16);
			st.st_rdev = makedev(data[4], data[5]);
			st.st_size = data[6];
			int w = lu_is_whiteout(&st, data[7] & 1, data[8] & 1);
			/* a whiteout is a 0/0 char device or an empty marked regular file */
			if (w && !((S_ISCHR(st.st_mode) && !data[4] && !data[5]) ||
				   (S_ISREG(st.st_mode) && !data[6] && (data[7] & 1) && (data[8] & 1))))
				abort();
		}
		break;
	}
	free(copy);
	return 0;
}

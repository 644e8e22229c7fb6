/* init-iso.c - libFuzzer target for the init's ISO9660 identity reader (initramfs/init/iso9660.c): a live.medium=
 * value up to the first NUL byte, then the bytes read at PVD_OFFSET, parsed and matched against each other. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iso9660.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t slen = nul ? (size_t)(nul - data) : size, plen = nul ? size - slen - 1 : 0, rlen = size % 97, i;
	char *spec = malloc(slen + 1), *reason = malloc(rlen ? rlen : 1);
	unsigned char *pvd = malloc(plen ? plen : 1); /* exact sizes: ASan sees any overread */
	struct medium_want want;
	struct iso_id id;
	int w, m;

	if (!spec || !reason || !pvd)
		abort();
	memcpy(spec, data, slen);
	spec[slen] = '\0';
	if (plen)
		memcpy(pvd, nul + 1, plen);
	w = medium_want_parse(spec, &want);
	if (!memchr(want.value, 0, sizeof(want.value)))
		abort();
	if (w == 0 && want.by_uuid) {
		if (strlen(want.value) != 16)
			abort();
		for (i = 0; i < 16; i++)
			if (!isdigit((unsigned char)want.value[i]))
				abort();
	}
	if (w == 0 && !want.by_uuid && (want.value[0] == '\0' || strlen(want.value) > 32))
		abort();
	if (medium_iso_id_parse(pvd, plen, &id) == 0) {
		if (plen < 847 || !memchr(id.label, 0, sizeof(id.label)) || strlen(id.uuid) != 16)
			abort();
		for (i = 0; id.label[i]; i++) /* the listing of media must stay printable */
			if (!isprint((unsigned char)id.label[i]))
				abort();
		if (w == 0) {
			m = medium_match(&want, &id, reason, rlen);
			if (rlen && !memchr(reason, 0, rlen))
				abort();
			if (m != (strcmp(want.value, want.by_uuid ? id.uuid : id.label) == 0))
				abort();
		}
	}
	free(spec);
	free(reason);
	free(pvd);
	return 0;
}

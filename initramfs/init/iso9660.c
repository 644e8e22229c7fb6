/* The ISO9660 reader: a medium's identity (label and UUID from its primary volume descriptor) and matching it
 * against live.medium=. Pure: no device opened here (discover.c reads the bytes). */
#include "iso9660.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int medium_want_parse(const char *spec, struct medium_want *out)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(spec, "UUID=", 5) == 0) {
		size_t n = 0;
		const char *p;

		out->by_uuid = true;
		/* blkid shows the date as YYYY-MM-DD-hh-mm-ss-cc; people paste that, so hyphens do not count. */
		for (p = spec + 5; *p; p++) {
			if (*p == '-')
				continue;
			if (!isdigit((unsigned char)*p) || n >= 16)
				return -1;
			out->value[n++] = *p;
		}
		return n == 16 ? 0 : -1;
	}
	if (strncmp(spec, "LABEL=", 6) == 0) {
		size_t n = strlen(spec + 6);

		if (n == 0 || n > 32)
			return -1;
		memcpy(out->value, spec + 6, n + 1);
		return 0;
	}
	return -1;
}

int medium_iso_id_parse(const unsigned char *pvd, size_t len, struct iso_id *out)
{
	size_t n, i;

	memset(out, 0, sizeof(*out));
	if (len < 847 || pvd[0] != 1 || memcmp(pvd + 1, "CD001", 5) != 0)
		return -1;
	memcpy(out->label, pvd + 40, 32);
	for (n = 32; n > 0 && (out->label[n - 1] == ' ' || out->label[n - 1] == '\0'); n--)
		;
	out->label[n] = '\0';
	/* Unprintable bytes would garble the "medium not found" listing. */
	for (i = 0; i < n; i++)
		if (!isprint((unsigned char)out->label[i]))
			out->label[i] = '?';
	for (i = 0; i < 16; i++)
		out->uuid[i] = isdigit(pvd[830 + i]) ? (char)pvd[830 + i] : '?';
	out->uuid[16] = '\0';
	return 0;
}

int medium_match(const struct medium_want *want, const struct iso_id *id, char *reason, size_t rlen)
{
	int ok = want->by_uuid ? strcmp(want->value, id->uuid) == 0 : strcmp(want->value, id->label) == 0;

	if (ok) {
		if (rlen && snprintf(reason, rlen, "label %s, UUID %s: match", id->label, id->uuid) < 0)
			reason[0] = '\0';
		return 1;
	}
	if (rlen && snprintf(reason, rlen, "label %s, UUID %s != wanted %s %s", id->label, id->uuid,
			     want->by_uuid ? "UUID" : "LABEL", want->value) < 0)
		reason[0] = '\0';
	return 0;
}

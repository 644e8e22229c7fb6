#ifndef LIVE_ISO9660_H
#define LIVE_ISO9660_H
#include <stdbool.h>
#include <stddef.h>

/* The ISO9660 primary volume descriptor sits in sector 16. */
#define PVD_OFFSET 32768
#define PVD_SIZE 2048

struct iso_id {
	char label[33]; /* volume id, trailing spaces removed */
	char uuid[17];  /* volume modification date, 16 digits (YYYYMMDDhhmmsscc) */
};

struct medium_want {
	bool by_uuid;
	char value[64]; /* 16 digits (hyphens removed) or the label */
};

/* "UUID=2025-01-02-03-04-05-00" or "LABEL=LIVEUNION" -> want; -1 if malformed. */
int medium_want_parse(const char *spec, struct medium_want *out);
/* Read the identity from the 2048 bytes at PVD_OFFSET; -1 if it is not an ISO9660 PVD. */
int medium_iso_id_parse(const unsigned char *pvd, size_t len, struct iso_id *out);
/* 1 if id is the wanted medium; else 0 and why in reason ("label X, UUID Y != wanted UUID Z"). */
int medium_match(const struct medium_want *want, const struct iso_id *id, char *reason, size_t rlen);
#endif

#ifndef LIVE_LUKS_H
#define LIVE_LUKS_H
/* An encrypted persistence store (luks.c): LUKS2 told from its header, unlocked with the cryptsetup the live root
 * carries, after asking for the passphrase on every console. */
#include <stdbool.h>
#include <stddef.h>

#include "liveunion/contract.h"
#include "plan.h"

#define LUKS_MAPPED STORE_LABEL /* the unlocked store: /dev/mapper/liveunion-rw, named as its label */
#define LUKS_TRIES 3

struct luks_id {
	char label[49]; /* the header's label, NUL-terminated */
	char uuid[41];
};

/* The first 512 bytes of a device: 0 with id for a LUKS2 header, -1 for anything else (LUKS1 too). */
int luks_id_parse(const unsigned char *b, size_t len, struct luks_id *id);
/* dev's LUKS2 identity: 1 (id filled), 0 not LUKS2, -1 unreadable. */
int luks_read_id(const char *dev, struct luks_id *id);
/* Ask for the passphrase of dev (what names it in the prompt) up to LUKS_TRIES times and open it read-only or not as
 * /dev/mapper/LUKS_MAPPED with cryptsetup from the stacked layers. 0: open, its device in mapped; -1: not
 * (three wrong passphrases, no answer within live.persist.timeout, no cryptsetup), why in why; nothing written. */
int luks_unlock(const struct plan *p, const struct boot *b, const char *dev, const char *what, bool ro, char *mapped,
		size_t mlen, char *why, size_t wlen);
/* Close /dev/mapper/LUKS_MAPPED again (a store that was opened but is not used). */
void luks_close(const struct boot *b);
#endif

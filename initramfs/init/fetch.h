#ifndef LIVE_FETCH_H
#define LIVE_FETCH_H
#include <stddef.h>

#include "plan.h"

/* A served image (./build.sh netboot) lists its files in live/MANIFEST, one "BYTES NAME" line each, NAME being a
 * layer (NN-name.squashfs) or its hash tree (NN-name.verity). The manifest is as untrusted as the files: it only
 * says what to download and how much RAM that takes; dm-verity and the root hashes on the command line decide
 * what is booted. */
#define FETCH_MAX_FILES (MAX_LAYERS * 2)
struct fetch_file {
	char name[64];
	unsigned long long bytes;
};

/* The manifest's lines into files (at most max); the count, or -1 with why in err (the line named). */
int fetch_manifest_parse(const char *text, struct fetch_file *files, int max, char *err, size_t elen);
/* The medium step of live.fetch=: the network, then every file of the manifest into a tmpfs on
 * run_live/medium (retrying, from the next URL, with backoff; the rescue shell after live.timeout s without
 * progress). The layers step then finds live/ there as on a disc. */
int fetch_medium(const struct plan *p, struct boot *b);
#endif

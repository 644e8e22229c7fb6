#ifndef LIVE_STORE_H
#define LIVE_STORE_H
/* Finding the persistence store (store.c): which device or image file, never formatting or writing. */
#include <stdbool.h>
#include <stddef.h>

#include "plan.h"

#define STORE_LABEL "liveunion-rw"
#define STORE_FILE "liveunion-rw.img"
#define STORE_DIR "liveunion-v1"

struct sb {
	int ext;
	int recover; /* the journal has to be replayed */
	int errors;  /* the kernel met damage (state "errors"): only e2fsck by hand helps */
	char label[17];
	char uuid[37];
};

struct store {
	char dev[64];     /* block device holding the ext4 store (a partition or /dev/loopN) */
	char what[PATH_LEN + 64]; /* for the messages: "/dev/sda3 (LABEL=liveunion-rw)" */
	char host[PATH_LEN + 16]; /* where the FAT/exFAT holding the image file is mounted, or "" */
	char dir[PATH_LEN + 16];  /* run_live/store */
	bool ro;
};

/* The ext2/3/4 superblock of dev: s->ext 0 when it is none. -1 when dev cannot be read. */
int store_read_sb(const char *dev, struct sb *s);
/* Find the store spec (live.persist=, or "auto" for live.persist=off's saved layers) asks for: 1 found
 * (s->dev, s->what set), 0 not (why in why). An image file is attached to a loop device (read-only
 * when s->ro) whose fd goes to *loopfd (else -1): close it once the store is mounted. auto and file:
 * look only at the disk p->device is on. */
int store_find(const struct plan *p, const char *spec, struct store *s, int *loopfd, char *why, size_t wlen);
#endif

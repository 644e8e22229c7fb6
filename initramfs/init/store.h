#ifndef LIVE_STORE_H
#define LIVE_STORE_H
/* The persistence store (store_find.c, store_image.c, store_fsck.c): finding the device or image file and checking
 * it; never formatting, and writing only through e2fsck -p when a journal needs replaying. */
#include <stdbool.h>
#include <stddef.h>

#include "plan.h"

struct sb {
	int ext;
	int recover; /* the journal has to be replayed */
	int errors;  /* the kernel met damage (state "errors"): only e2fsck by hand helps */
	char label[17];
	char uuid[37];
};

/* s->dir (run_live/store, where the store is mounted) and s->host (where a FAT holding an image file is)
 * made; 0, or -1 with fail() set. */
int store_dirs(const struct plan *p, struct store *s);
/* The ext2/3/4 superblock (the 1024 bytes at byte 1024 of a device): s->ext 0 when it is none. */
void store_sb_parse(const unsigned char b[1024], struct sb *s);
/* The cluster size in bytes that a FAT12/16/32 or exFAT boot sector gives, 0 when it gives none: where a file on it
 * may jump (file_block_run's step). */
unsigned long long store_fat_cluster_bytes(const unsigned char boot[512]);
/* The ext2/3/4 superblock of dev: s->ext 0 when it is none. -1 when dev cannot be read. */
int store_read_sb(const char *dev, struct sb *s);
/* A write-protected stick (or any read-only device dev): the store on it is used read-only (s->ro, s->dev_ro), said
 * once. */
void store_note_read_only(struct store *s, const char *dev);
/* path (an image file) on the FAT/exFAT partition part (iso_host: the partition holding a booted ISO file, which may
 * be ext4 too) attached to a loop device, read-only when s->ro: s->dev and s->what set, s->luks when the file holds a
 * LUKS2 container. A contiguous file is attached straight from the partition (loop with offset and size): the FAT
 * itself is never mounted read-write, so it is never left "dirty" by a power-off; a fragmented one goes through a
 * read-write mount of the FAT, which then stays mounted on s->host. Returns the loop fd (close it once the store is
 * mounted), or -1. */
int store_image_on(const char *part, const char *path, bool iso_host, struct store *s);
/* Find the store of kind (live.persist=, or auto for live.persist=off's saved layers; the name or file
 * from p->persist_arg): 1 found
 * (s->dev, s->what set), 0 not (why in why). An image file is attached to a loop device (read-only
 * when s->ro) whose fd goes to *loopfd (else -1): close it once the store is mounted. auto and file:
 * look only at the disk b->device is on. */
int store_find(const struct plan *p, const struct boot *b, enum persist_kind kind, struct store *s, int *loopfd,
	       char *why, size_t wlen);
/* e2fsck of the found store: -n, or -p for a journal to replay when writable. 0 when it may be mounted;
 * else -1, said on the console (a store with errors is left untouched). */
int store_check(const struct store *s);
/* Undo store_find and the mount (mounted): the loop device of an image file (s->loopfd, then -1), the FAT it is on. */
void store_release(struct store *s, bool mounted);
#endif

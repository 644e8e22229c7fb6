/* Finding the persistence store for the store step (store_step.c): a partition by label, UUID or PARTUUID (ext4, or a
 * LUKS2 container that luks.c unlocks), or an ext4 image file (store_image.c) on a FAT/exFAT partition of the boot
 * disk or beside a booted ISO file; reading only, attaching loop devices. Its check is store_fsck.c's. */
#include "store.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <unistd.h>

#include "disk.h"
#include "liveunion/contract.h"
#include "log.h"
#include "luks.h"
#include "modload.h"
#include "util.h"

#define MAX_PARTS 32
#define MAX_NAMED 256 /* block devices searched for a named store */

void store_sb_parse(const unsigned char b[1024], struct sb *s)
{
	memset(s, 0, sizeof(*s));
	if (le16(b + 0x38) != 0xEF53)
		return;
	s->ext = 1;
	s->recover = (le32(b + 0x60) & 0x4) != 0;
	s->errors = (le16(b + 0x3a) & 0x2) != 0;
	memcpy(s->label, b + 0x78, 16);
	s->label[16] = '\0';
	text_fmt(s->uuid, sizeof(s->uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0x68], b[0x69], b[0x6a], b[0x6b], b[0x6c], b[0x6d], b[0x6e], b[0x6f], b[0x70], b[0x71], b[0x72],
		 b[0x73], b[0x74], b[0x75], b[0x76], b[0x77]);
}

int store_read_sb(const char *dev, struct sb *s)
{
	unsigned char b[1024];

	memset(s, 0, sizeof(*s));
	if (disk_read_at(dev, b, sizeof(b), 1024) != (ssize_t)sizeof(b))
		return -1;
	store_sb_parse(b, s);
	return 0;
}

/* A device carrying the store's label: an ext2/3/4 filesystem, or a LUKS2 container (s->luks set). 1 yes, 0 no,
 * -1 unreadable. */
static int labelled_store(const char *dev, struct store *s)
{
	struct luks_id lid;
	struct sb sb;

	if (store_read_sb(dev, &sb) != 0)
		return -1;
	if (sb.ext)
		return strcmp(sb.label, STORE_LABEL) == 0;
	s->luks = luks_read_id(dev, &lid) == 1 && strcmp(lid.label, STORE_LABEL) == 0;
	return s->luks;
}

/* Our own loop devices (layers, toram, an image file attached later) and RAM disks never hold a store: left
 * out of the search, so many layers cannot push the store's disk past the list's end. */
static bool never_a_store(const char *sysblock, const char *name)
{
	(void)sysblock;
	return strncmp(name, "loop", 4) == 0 || strncmp(name, "ram", 3) == 0 || strncmp(name, "zram", 4) == 0;
}

/* Every block device but never_a_store ones, or the partitions of disk; none when sysfs cannot be read (then
 * nothing is found, which the caller says). */
static int list_block(const char *disk, char names[][DISK_NAME_LEN], int max)
{
	int n = disk_list(SYSBLOCK, disk, never_a_store, names, max);

	if (n >= 0)
		return n;
	dbg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
	fail_clear();
	return 0;
}

int store_dirs(const struct plan *p, struct store *s)
{
	if (path_fmt(s->dir, sizeof(s->dir), "%s/" LIVE_STORE, p->run_live) != 0 ||
	    path_fmt(s->host, sizeof(s->host), "%s/store-host", p->run_live) != 0 || mkdir_p(s->dir, 0755) != 0 ||
	    mkdir_p(s->host, 0755) != 0)
		return -1;
	return 0;
}

/* The store of a boot from an ISO file (live.iso=): auto takes a partition labelled liveunion-rw on the disk of the
 * ISO's partition, else liveunion-rw.img in the ISO's own directory; file:PATH is looked for on the ISO's partition,
 * then on the disk's other FAT/exFAT partitions. Nothing else on that disk. */
static int store_beside_iso(const struct plan *p, const struct boot *b, enum persist_kind kind, struct store *s,
			    int *loopfd, char *why, size_t wlen)
{
	char names[MAX_PARTS][DISK_NAME_LEN], disk[DISK_NAME_LEN], dev[DISK_NAME_LEN + 8], img[PATH_LEN + 32];
	const char *slash = strrchr(p->iso_path, '/');
	int n, i;

	if (disk_of(SYSBLOCK, b->iso_host, disk, sizeof(disk)) != 0) {
		text_fmt(why, wlen, "cannot tell which disk %s (holding the ISO file) is on", b->iso_host);
		return 0;
	}
	n = list_block(disk, names, MAX_PARTS);
	if (kind == PK_FILE) {
		if ((*loopfd = store_image_on(b->iso_host, p->persist_arg, true, s)) >= 0)
			return 1;
		for (i = 0; i < n; i++)
			if (path_fmt(dev, sizeof(dev), "/dev/%s", names[i]) == 0 && strcmp(dev, b->iso_host) != 0 &&
			    (*loopfd = store_image_on(dev, p->persist_arg, false, s)) >= 0)
				return 1;
		text_fmt(why, wlen, "no %s on %s (holding the ISO file) nor on the FAT/exFAT partitions of /dev/%s",
			 p->persist_arg, b->iso_host, disk);
		return 0;
	}
	for (i = 0; i < n; i++) {
		text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
		if (labelled_store(dev, s) == 1) {
			store_note_read_only(s, dev);
			text_fmt(s->dev, sizeof(s->dev), "%s", dev);
			text_fmt(s->what, sizeof(s->what), "%s (%sLABEL=" STORE_LABEL ")", dev,
				 s->luks ? "LUKS2 " : "");
			return 1;
		}
	}
	if (path_fmt(img, sizeof(img), "%.*s/" STORE_IMAGE, slash ? (int)(slash - p->iso_path) : 0, p->iso_path) != 0) {
		text_fmt(why, wlen, "%s: %s", fail_what(), strerror(fail_errno()));
		fail_clear();
		return 0;
	}
	if ((*loopfd = store_image_on(b->iso_host, img, true, s)) >= 0)
		return 1;
	text_fmt(why, wlen, "no partition labelled " STORE_LABEL " on /dev/%s and no %s beside the ISO file on %s",
		 disk, img, b->iso_host);
	return 0;
}

/* LABEL=, UUID= or PARTUUID=: on any disk, as the name is the user's choice; waited for up to live.timeout, as a named
 * stick may be enumerated after the medium. Two with that name: neither is used. */
static int find_named(const struct plan *p, const struct boot *b, enum persist_kind kind, struct store *s, char *why,
		      size_t wlen)
{
	static char names[MAX_NAMED][DISK_NAME_LEN];
	char dev[DISK_NAME_LEN + 8], first[DISK_NAME_LEN + 8], pu[40];
	const char *spec = p->persist, *want = p->persist_arg;
	unsigned waited = 0; /* quarter seconds */
	struct sb sb;
	int n, i;

	for (;;) {
		n = list_block(NULL, names, MAX_NAMED);
		first[0] = '\0';
		for (i = 0; i < n; i++) {
			text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
			if (kind == PK_PARTUUID && (disk_part_uuid(SYSBLOCK, "/dev", names[i], pu, sizeof(pu)) != 0 ||
						    strcasecmp(pu, want) != 0))
				continue;
			if (store_read_sb(dev, &sb) != 0)
				continue;
			if (!sb.ext) { /* a LUKS2 container answers to its header's label and UUID */
				struct luks_id lid;

				if (luks_read_id(dev, &lid) != 1 || (kind == PK_LABEL ? strcmp(lid.label, want) != 0 :
								     kind == PK_UUID ? strcasecmp(lid.uuid, want) != 0 :
										       0))
					continue;
			} else if (kind != PK_PARTUUID &&
				   (kind == PK_LABEL ? strcmp(sb.label, want) != 0 : strcasecmp(sb.uuid, want) != 0)) {
				continue;
			}
			/* two sticks with one name (a second liveunion stick, a dd clone): which one holds
			 * the user's data is a guess, so neither is used */
			if (first[0]) {
				text_fmt(why, wlen, "%s and %s both carry %s; none used: name one by %s", first, dev,
					 spec,
					 kind == PK_LABEL ? "UUID= or PARTUUID=" :
					 kind == PK_UUID  ? "PARTUUID=, or give one a new UUID (tune2fs -U)" :
							    "UUID=, or give one a new PARTUUID (sfdisk --part-uuid)");
				return 0;
			}
			text_fmt(first, sizeof(first), "%s", dev);
			s->luks = !sb.ext;
		}
		if (first[0]) {
			store_note_read_only(s, first);
			text_fmt(s->dev, sizeof(s->dev), "%s", first);
			text_fmt(s->what, sizeof(s->what), "%s (%s%s)", first, s->luks ? "LUKS2 " : "", spec);
			return 1;
		}
		if (waited >= p->timeout * 4)
			break;
		if (waited == 0)
			msg("persistence: waiting up to %u s for %s to appear", p->timeout, spec);
		modload_wait(b->mods, 250);
		waited++;
	}
	text_fmt(why, wlen, "no ext2/3/4 filesystem with %s (waited %u s)", spec, p->timeout);
	return 0;
}

/* auto and file: only the disk we booted from: a stranger's stick with the right label must never be mounted (any
 * other disk only when named by LABEL=/UUID=). A partition labelled liveunion-rw first, then an image file. */
static int find_on_boot_disk(const struct plan *p, const struct boot *b, enum persist_kind kind, struct store *s,
			     int *loopfd, char *why, size_t wlen)
{
	static char names[MAX_PARTS][DISK_NAME_LEN];
	char disk[DISK_NAME_LEN], dev[DISK_NAME_LEN + 8], unreadable[200] = "";
	const char *want = p->persist_arg;
	int n, i;

	if (disk_of(SYSBLOCK, b->device, disk, sizeof(disk)) != 0) {
		text_fmt(why, wlen, "cannot tell which disk %s is on", b->device);
		return 0;
	}
	n = list_block(disk, names, MAX_PARTS);
	if (kind != PK_FILE) {
		for (i = 0; i < n; i++) {
			text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
			int r = labelled_store(dev, s);

			if (r < 0) { /* an I/O error: the store may be there, say so */
				text_list_add(unreadable, sizeof(unreadable), dev, strlen(dev));
				continue;
			}
			if (r) {
				store_note_read_only(s, dev);
				text_fmt(s->dev, sizeof(s->dev), "%s", dev);
				text_fmt(s->what, sizeof(s->what), "%s (%sLABEL=" STORE_LABEL ")", dev,
					 s->luks ? "LUKS2 " : "");
				return 1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
		if ((*loopfd = store_image_on(dev, kind == PK_FILE ? want : STORE_IMAGE, false, s)) >= 0)
			return 1;
	}
	if (kind == PK_FILE)
		text_fmt(why, wlen, "no %s on the FAT/exFAT partitions of /dev/%s", want, disk);
	else
		text_fmt(why, wlen, "no partition labelled " STORE_LABEL " and no " STORE_IMAGE " on /dev/%s%s%s", disk,
			 unreadable[0] ? "; could not read " : "", unreadable);
	return 0;
}

int store_find(const struct plan *p, const struct boot *b, enum persist_kind kind, struct store *s, int *loopfd,
	       char *why, size_t wlen)
{
	*loopfd = -1;
	if (kind == PK_LABEL || kind == PK_UUID || kind == PK_PARTUUID)
		return find_named(p, b, kind, s, why, wlen);
	if (b->iso_host[0])
		return store_beside_iso(p, b, kind, s, loopfd, why, wlen);
	return find_on_boot_disk(p, b, kind, s, loopfd, why, wlen);
}

void store_release(struct store *s, bool mounted)
{
	if (mounted && umount(s->dir) != 0)
		msg("umount %s: %s", s->dir, strerror(errno));
	if (s->loopfd >= 0 && close(s->loopfd) != 0)
		msg("close %s: %s", s->dev, strerror(errno));
	if (s->loopfd >= 0 && umount(s->host) != 0 && errno != EINVAL)
		msg("umount %s: %s", s->host, strerror(errno));
	s->loopfd = -1;
}

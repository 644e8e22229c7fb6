/* The persistence store, for the store step (store_step.c): a partition by label, UUID or PARTUUID
 * (ext4, or a LUKS2 container that luks.c unlocks), or an ext4 image file on a FAT/exFAT partition of the boot
 * disk or beside a booted ISO file, found (reading only, attaching loop devices) and checked with e2fsck. */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/loop.h>

#include "disk.h"
#include "liveunion/contract.h"
#include "log.h"
#include "loop.h"
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

unsigned long long store_fat_cluster_bytes(const unsigned char boot[512])
{
	/* exFAT gives both as powers of two; its largest valid cluster is 32 MiB (shifts 9-12 and up to 25 in all) */
	if (memcmp(boot + 3, "EXFAT   ", 8) == 0)
		return boot[0x6c] < 13 && boot[0x6d] < 26 ? 1ULL << (boot[0x6c] + boot[0x6d]) : 0;
	return (unsigned long long)le16(boot + 0x0b) * boot[0x0d];
}

/* Where the image file lies on the FAT/exFAT partition, if in one piece: *offset in bytes. The kernel's
 * own block map is asked at both ends of every cluster, where a FAT file may jump. 0 contiguous, -1 not. */
static int file_extent(const char *part, int fd, unsigned long long fsize, unsigned long long *offset)
{
	unsigned char boot[512];
	unsigned long long cluster = 0, first;
	char why[160];
	int bsz, pfd;

	if ((pfd = open(part, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(pfd, boot, sizeof(boot), 0) == (ssize_t)sizeof(boot))
		cluster = store_fat_cluster_bytes(boot);
	if (close(pfd) != 0)
		return -1;
	if (file_block_run(fd, fsize, cluster, &bsz, &first, why, sizeof(why)) != 0) {
		dbg("image file on %s: %s", part, why);
		return -1;
	}
	*offset = first * (unsigned long long)bsz;
	return 0;
}

/* A write-protected stick (or any read-only device): the store on it is used read-only, said once. */
static void note_read_only(struct store *s, const char *dev)
{
	int ro = 0, fd;

	if (s->ro || (fd = open(dev, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (ioctl(fd, BLKROGET, &ro) != 0)
		ro = 0;
	if (close(fd) != 0)
		msg("close %s: %s", dev, strerror(errno));
	if (!ro)
		return;
	s->ro = s->dev_ro = true;
	msg("persistence: %s is a read-only device (write-protected?): its store can only be used read-only", dev);
}

/* Look for path on a FAT/exFAT partition. A contiguous image file is attached straight from the
 * partition (loop with offset and size): the FAT itself is never mounted read-write, so it is never left
 * "dirty" by a power-off. A fragmented one goes through a read-write mount of the FAT, which then
 * stays mounted on s->host. Returns the loop fd (close it once the store is mounted) or -1. */
static int image_on(const char *part, const char *path, bool iso_host, struct store *s)
{
	/* beside an ISO file (live.iso=) the partition may be ext2/3/4 too: its journal keeps it consistent, so the
	 * image is used through it (never by offset under a mounted ext4's feet) */
	static const char *const types[] = {"vfat", "exfat", "ext4"};
	char file[PATH_LEN * 2];
	unsigned long long offset = 0, fsize = 0;
	struct stat st;
	size_t i, ntypes = sizeof(types) / sizeof(types[0]) - !iso_host;
	int fd, ffd, nr, direct = -1;

	for (i = 0; i < ntypes; i++)
		if (mount(part, s->host, types[i], MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) == 0)
			break;
	if (i == ntypes)
		return -1;
	text_fmt(file, sizeof(file), "%s/%s", s->host, path[0] == '/' ? path + 1 : path);
	if ((ffd = open(file, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (fstat(ffd, &st) == 0 && S_ISREG(st.st_mode)) {
			fsize = (unsigned long long)st.st_size;
			direct = strcmp(types[i], "ext4") == 0 ? -1 : file_extent(part, ffd, fsize, &offset);
		}
		if (close(ffd) != 0)
			msg("close %s: %s", file, strerror(errno));
	}
	if (ffd < 0 || fsize == 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	note_read_only(s, part); /* before s->ro decides how the image is attached */
	if (direct == 0) {
		if (umount(s->host) != 0) {
			msg("umount %s: %s", s->host, strerror(errno));
			return -1;
		}
		if ((fd = loop_attach(part, s->ro, offset, fsize, &nr)) < 0) {
			msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
			return -1;
		}
		/* Through the partition's page cache every write at the store's ends would rewrite the whole 4 KiB page
		 * around it: with a store that does not start and end on a page boundary (a FAT with 512-byte clusters)
		 * the FAT's own sectors beside it (its directory, say) would be written again and again, and a power
		 * cut could tear them. Direct I/O writes exactly the store's sectors; without it only a store on page
		 * boundaries is used this way. */
		if (s->ro || ioctl(fd, LOOP_SET_DIRECT_IO, 1UL) == 0 || (offset % 4096 == 0 && fsize % 4096 == 0)) {
			text_fmt(s->dev, sizeof(s->dev), "/dev/loop%d", nr);
			text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s, in one piece at byte %llu) via %s", path,
				 part + 5, types[i], offset, s->dev);
			return fd;
		}
		msg("persistence: %s on /dev/%s lies at byte %llu, not on a 4 KiB boundary, and the loop device refused "
		    "direct I/O (%s): used through the %s filesystem instead, which stays mounted until power-off",
		    path, part + 5, offset, strerror(errno), types[i]);
		if (close(fd) != 0)
			msg("close /dev/loop%d: %s", nr, strerror(errno));
		if (mount(part, s->host, types[i], MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) !=
		    0) {
			msg("persistence: mount %s again: %s", part, strerror(errno));
			return -1;
		}
	} else if (strcmp(types[i], "ext4") == 0)
		msg("persistence: %s on /dev/%s is used through its ext4 filesystem, which stays mounted until power-off",
		    path, part + 5);
	else if (direct != 0)
		msg("persistence: %s on /dev/%s is fragmented: used through the %s filesystem, which stays mounted "
		    "until power-off (other systems may then call it not cleanly unmounted)",
		    path, part + 5, types[i]);
	if (!s->ro && mount(NULL, s->host, NULL, MS_REMOUNT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) != 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if ((fd = loop_attach(file, s->ro, 0, 0, &nr)) < 0) {
		msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	text_fmt(s->dev, sizeof(s->dev), "/dev/loop%d", nr);
	text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s) via %s", path, part + 5, types[i], s->dev);
	return fd;
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

/* An image file just attached (s->dev): a LUKS2 container is unlocked before use. */
static int image_found(struct store *s, int fd)
{
	struct luks_id lid;

	s->luks = luks_read_id(s->dev, &lid) == 1;
	if (s->luks) {
		size_t used = strlen(s->what);

		text_fmt(s->what + used, sizeof(s->what) - used, ", LUKS2");
	}
	return fd;
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
		if ((*loopfd = image_on(b->iso_host, p->persist_arg, true, s)) >= 0)
			return image_found(s, *loopfd) >= 0;
		for (i = 0; i < n; i++)
			if (path_fmt(dev, sizeof(dev), "/dev/%s", names[i]) == 0 && strcmp(dev, b->iso_host) != 0 &&
			    (*loopfd = image_on(dev, p->persist_arg, false, s)) >= 0)
				return image_found(s, *loopfd) >= 0;
		text_fmt(why, wlen, "no %s on %s (holding the ISO file) nor on the FAT/exFAT partitions of /dev/%s",
			 p->persist_arg, b->iso_host, disk);
		return 0;
	}
	for (i = 0; i < n; i++) {
		text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
		if (labelled_store(dev, s) == 1) {
			note_read_only(s, dev);
			text_fmt(s->dev, sizeof(s->dev), "%s", dev);
			text_fmt(s->what, sizeof(s->what), "%s (%sLABEL=" STORE_LABEL ")", dev,
				 s->luks ? "LUKS2 " : "");
			return 1;
		}
	}
	text_fmt(img, sizeof(img), "%.*s/" STORE_IMAGE, slash ? (int)(slash - p->iso_path) : 0, p->iso_path);
	if ((*loopfd = image_on(b->iso_host, img, true, s)) >= 0)
		return image_found(s, *loopfd) >= 0;
	text_fmt(why, wlen, "no partition labelled " STORE_LABEL " on /dev/%s and no %s beside the ISO file on %s",
		 disk, img, b->iso_host);
	return 0;
}

int store_find(const struct plan *p, const struct boot *b, enum persist_kind kind, struct store *s, int *loopfd,
	       char *why, size_t wlen)
{
	static char names[MAX_NAMED][DISK_NAME_LEN];
	char disk[DISK_NAME_LEN], dev[DISK_NAME_LEN + 8], first[DISK_NAME_LEN + 8], unreadable[200] = "";
	const char *spec = p->persist, *want = p->persist_arg;
	struct sb sb;
	int n, i;

	*loopfd = -1;
	if (kind == PK_LABEL || kind == PK_UUID || kind == PK_PARTUUID) {
		char pu[40];
		unsigned waited = 0; /* quarter seconds: a named stick may be enumerated after the medium */

		for (;;) {
			n = list_block(NULL, names, MAX_NAMED);
			first[0] = '\0';
			for (i = 0; i < n; i++) {
				text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
				if (kind == PK_PARTUUID &&
				    (disk_part_uuid(SYSBLOCK, "/dev", names[i], pu, sizeof(pu)) != 0 ||
				     strcasecmp(pu, want) != 0))
					continue;
				if (store_read_sb(dev, &sb) != 0)
					continue;
				if (!sb.ext) { /* a LUKS2 container answers to its header's label and UUID */
					struct luks_id lid;

					if (luks_read_id(dev, &lid) != 1 ||
					    (kind == PK_LABEL ? strcmp(lid.label, want) != 0 :
					     kind == PK_UUID  ? strcasecmp(lid.uuid, want) != 0 :
								0))
						continue;
				} else if (kind != PK_PARTUUID && (kind == PK_LABEL ? strcmp(sb.label, want) != 0 :
										      strcasecmp(sb.uuid, want) != 0)) {
					continue;
				}
				/* two sticks with one name (a second liveunion stick, a dd clone): which one holds
				 * the user's data is a guess, so neither is used */
				if (first[0]) {
					text_fmt(why, wlen, "%s and %s both carry %s; none used: name one by %s", first,
						 dev, spec,
						 kind == PK_LABEL ?
							 "UUID= or PARTUUID=" :
						 kind == PK_UUID ?
							 "PARTUUID=, or give one a new UUID (tune2fs -U)" :
							 "UUID=, or give one a new PARTUUID (sfdisk --part-uuid)");
					return 0;
				}
				text_fmt(first, sizeof(first), "%s", dev);
				s->luks = !sb.ext;
			}
			if (first[0]) {
				note_read_only(s, first);
				text_fmt(s->dev, sizeof(s->dev), "%s", first);
				text_fmt(s->what, sizeof(s->what), "%s (%s%s)", first, s->luks ? "LUKS2 " : "", spec);
				return 1;
			}
			if (waited >= p->timeout * 4)
				break;
			if (waited == 0)
				msg("persistence: waiting up to %u s for %s to appear", p->timeout, spec);
			struct timespec ts = {0, 250000000L};
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
			modload_poll();
			waited++;
		}
		text_fmt(why, wlen, "no ext2/3/4 filesystem with %s (waited %u s)", spec, p->timeout);
		return 0;
	}
	if (b->iso_host[0])
		return store_beside_iso(p, b, kind, s, loopfd, why, wlen);
	if (disk_of(SYSBLOCK, b->device, disk, sizeof(disk)) != 0) {
		text_fmt(why, wlen, "cannot tell which disk %s is on", b->device);
		return 0;
	}
	/* auto and file: look only at the disk we booted from: a stranger's stick with the right
	 * label must never be mounted (any other disk only when named by LABEL=/UUID=). */
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
				note_read_only(s, dev);
				text_fmt(s->dev, sizeof(s->dev), "%s", dev);
				text_fmt(s->what, sizeof(s->what), "%s (%sLABEL=" STORE_LABEL ")", dev,
					 s->luks ? "LUKS2 " : "");
				return 1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
		if ((*loopfd = image_on(dev, kind == PK_FILE ? want : STORE_IMAGE, false, s)) >= 0) {
			image_found(s, *loopfd);
			return 1;
		}
	}
	if (kind == PK_FILE)
		text_fmt(why, wlen, "no %s on the FAT/exFAT partitions of /dev/%s", want, disk);
	else
		text_fmt(why, wlen, "no partition labelled " STORE_LABEL " and no " STORE_IMAGE " on /dev/%s%s%s", disk,
			 unreadable[0] ? "; could not read " : "", unreadable);
	return 0;
}

#define E2FSCK "/sbin/e2fsck"

static int check_failed(const struct store *s, const char *how, int rc, const char *left)
{
	msg("persistence: %s: e2fsck %s exit %d: errors that need a human (run e2fsck %s by hand); the store is "
	    "%s and not mounted, changes go to tmpfs",
	    s->what, how, rc, s->dev, left);
	return -1;
}

/* -n first: it never writes, so a store with errors stays byte for byte as it was. Only a
 * journal that needs replaying (the normal state after a power cut) gets e2fsck -p. */
int store_check(const struct store *s)
{
	const char *const ncheck[] = {E2FSCK, "-n", s->dev, NULL}, *const pcheck[] = {E2FSCK, "-p", s->dev, NULL};
	const char *const fcheck[] = {E2FSCK, "-fn", s->dev, NULL};
	struct sb sb;
	int rc;

	if (access(E2FSCK, X_OK) != 0) {
		msg("persistence: %s: no " E2FSCK " in the initramfs, so the store cannot be checked", s->what);
		return -1;
	}
	if (store_read_sb(s->dev, &sb) != 0)
		return -1;
	if (sb.recover && s->ro) {
		msg("persistence: %s: its journal needs replaying (the store was not cleanly unmounted), which %s; the "
		    "store is left untouched and not mounted, changes go to tmpfs (boot once with it writable to replay)",
		    s->what, s->dev_ro ? "a read-only device cannot have" : "live.persist.ro does not do");
		return -1;
	}
	if (sb.recover) {
		/* the journal replay marks the store clean without looking at the rest of it: after an unclean
		 * shutdown the whole store is checked too, read-only (-fn), before anything mounts it */
		if ((rc = run_wait(pcheck)) >= 4)
			return check_failed(s, "-p", rc, "left as e2fsck -p left it");
		if (rc != 0)
			msg("persistence: %s: e2fsck -p exit %d while replaying the journal (see above)", s->what, rc);
		return (rc = run_wait(fcheck)) == 0 ?
			       0 :
			       check_failed(s, "-fn (after the journal replay)", rc, "otherwise untouched");
	}
	return (rc = run_wait(ncheck)) == 0 ? 0 : check_failed(s, "-n", rc, "left untouched");
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

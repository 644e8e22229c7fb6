#include "discover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "disk.h"
#include "log.h"
#include "loop.h"
#include "modload.h"
#include "util.h"

#define MAX_SEEN 256
#define POLL_MS 100

struct seen {
	char name[DISK_NAME_LEN];
	char reason[320];
};

/* live.iso=: the loop device of the ISO file, held open until the ISO is mounted (autoclear). */
static int iso_fd = -1;

/* One block device: 1 = the wanted medium (id filled), 0 = not it (why in reason). */
static int probe_device(const char *dev, const struct medium_want *want, struct iso_id *id, char *reason, size_t rlen)
{
	unsigned char pvd[PVD_SIZE];
	ssize_t n;
	int fd, err;

	/* Without O_NONBLOCK an empty CD drive says ENOMEDIUM, which is the clue users need. */
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		text_fmt(reason, rlen, "cannot open: %s", strerror(errno));
		return 0;
	}
	n = pread(fd, pvd, sizeof(pvd), PVD_OFFSET);
	err = errno;
	if (close(fd) != 0 && n >= 0) {
		text_fmt(reason, rlen, "close: %s", strerror(errno));
		return 0;
	}
	if (n < 0) {
		text_fmt(reason, rlen, "read at byte %d: %s", PVD_OFFSET, strerror(err));
		return 0;
	}
	if (n < (ssize_t)sizeof(pvd)) {
		text_fmt(reason, rlen, "too small for ISO9660 (%zd bytes at byte %d)", n, PVD_OFFSET);
		return 0;
	}
	if (medium_iso_id_parse(pvd, sizeof(pvd), id) != 0) {
		text_fmt(reason, rlen, "not ISO9660 (no CD001 primary volume descriptor)");
		return 0;
	}
	return medium_match(want, id, reason, rlen);
}

/* live.iso=: whether dev's filesystem holds the ISO file p->iso_path and it is the wanted medium. 1: yes, the
 * filesystem stays mounted read-only on dir and the ISO is on a loop device (b->device, b->iso_host,
 * b->iso_fstype and id set); 0: no, why in reason, nothing left mounted or attached. */
/* Mount dev's filesystem (one a user keeps files on) read-only on dir: its type, or NULL with why in reason. */
static const char *mount_files_fs(const char *dev, const char *dir, char *reason, size_t rlen)
{
	unsigned char b[FS_SNIFF_LEN];
	const char *type;
	ssize_t n;
	int fd, err;

	if ((fd = open(dev, O_RDONLY | O_CLOEXEC)) < 0) {
		text_fmt(reason, rlen, "cannot open: %s", strerror(errno));
		return NULL;
	}
	n = pread(fd, b, sizeof(b), 0);
	err = errno;
	if (close(fd) != 0 && n >= 0) {
		text_fmt(reason, rlen, "close: %s", strerror(errno));
		return NULL;
	}
	if (n < 0) {
		text_fmt(reason, rlen, "read: %s", strerror(err));
		return NULL;
	}
	if (!(type = disk_fs_type(b, (size_t)n))) {
		text_fmt(reason, rlen, "no ext2/3/4, FAT, exFAT or NTFS filesystem");
		return NULL;
	}
	if (mount(dev, dir, type, MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) != 0) {
		err = errno;
		text_fmt(reason, rlen, "%s, but mounting it read-only failed: %s%s", type, strerror(err),
			 err == ENODEV ? " (this kernel has no driver for it)" : "");
		return NULL;
	}
	return type;
}

/* The devices after the one holding the ISO file that hold a file of the same path too: said, since the store
 * beside the first one is the one used (name order), which may not be the copy the boot loader read. */
static void iso_also_on(const struct plan *p, const struct boot *b, const struct seen *seen, int from, int n,
			const char *devdir, const char *isodir)
{
	char dir[PATH_LEN + 16], dev[PATH_LEN], file[PATH_LEN * 2 + 16], why[200], also[400] = "";
	struct stat st;
	int i;

	if (path_fmt(dir, sizeof(dir), "%s-other", isodir) != 0 || mkdir_p(dir, 0755) != 0) {
		fail_clear();
		return;
	}
	for (i = from; i < n; i++) {
		if (snprintf(dev, sizeof(dev), "%s/%s", devdir, seen[i].name) >= (int)sizeof(dev) ||
		    !mount_files_fs(dev, dir, why, sizeof(why)))
			continue;
		if (path_fmt(file, sizeof(file), "%s%s", dir, p->iso_path) != 0)
			fail_clear(); /* not there, then */
		else if (stat(file, &st) == 0 && S_ISREG(st.st_mode))
			text_list_add(also, sizeof(also), dev, strlen(dev));
		if (umount(dir) != 0)
			msg("umount %s: %s", dir, strerror(errno));
	}
	if (rmdir(dir) != 0)
		dbg("rmdir %s: %s", dir, strerror(errno));
	if (also[0])
		msg("WARNING: %s is also on %s: the one on %s is used, and persistence looks beside it (the first in "
		    "name order, maybe not the copy the boot loader read); give the copies different names to choose",
		    p->iso_path, also, b->iso_host);
}

static int probe_iso_host(const struct plan *p, struct boot *b, const char *dev, const char *dir, struct iso_id *id,
			  char *reason, size_t rlen)
{
	char file[PATH_LEN * 2 + 16], loopdev[32], why[200];
	const char *type;
	struct stat st;
	int nr, lfd, err;

	if (!(type = mount_files_fs(dev, dir, reason, rlen)))
		return 0;
	if (path_fmt(file, sizeof(file), "%s%s", dir, p->iso_path) != 0) {
		text_fmt(reason, rlen, "%s, no %s on it (%s)", type, p->iso_path, strerror(fail_errno()));
		fail_clear();
	} else if (stat(file, &st) != 0) {
		err = errno;
		text_fmt(reason, rlen, "%s, no %s on it (%s)", type, p->iso_path, strerror(err));
	} else if (!S_ISREG(st.st_mode)) {
		text_fmt(reason, rlen, "%s, its %s is not a file", type, p->iso_path);
	} else if ((lfd = loop_attach(file, true, 0, 0, &nr)) < 0) {
		text_fmt(reason, rlen, "%s, holds %s but it cannot be attached: %s: %s", type, p->iso_path, fail_what(),
			 strerror(fail_errno()));
		fail_clear();
	} else {
		text_fmt(loopdev, sizeof(loopdev), "/dev/loop%d", nr);
		if (probe_device(loopdev, &p->want, id, why, sizeof(why)) == 1) {
			iso_fd = lfd;
			text_fmt(b->device, sizeof(b->device), "%s", loopdev);
			text_fmt(b->iso_host, sizeof(b->iso_host), "%s", dev);
			text_fmt(b->iso_fstype, sizeof(b->iso_fstype), "%s", type);
			return 1;
		}
		text_fmt(reason, rlen, "%s, holds %s but it is not the wanted medium: %s", type, p->iso_path, why);
		if (close(lfd) != 0)
			msg("close %s: %s", loopdev, strerror(errno));
	}
	if (umount(dir) != 0)
		msg("umount %s: %s", dir, strerror(errno));
	return 0;
}

void discover_done(void)
{
	if (iso_fd >= 0 && close(iso_fd) != 0)
		msg("close the ISO file's loop device: %s", strerror(errno));
	iso_fd = -1;
}

/* Name order, but a name sorts after its own extensions (sda1 before sda): a hybrid ISO matches
 * as the whole disk and as its first partition, and mounting the partition leaves the disk's
 * other partitions (the persistence store) free to open. */
static int by_name(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)((const struct seen *)a)->name;
	const unsigned char *y = (const unsigned char *)((const struct seen *)b)->name;

	for (; *x && *x == *y; x++, y++)
		;
	return (*x ? *x : 256) - (*y ? *y : 256);
}

/* Unused loop, ram and nbd devices are always there and never the medium; listing them would bury the real clue. */
static bool idle_virtual(const char *sysblock, const char *name)
{
	char path[PATH_LEN], buf[32];
	ssize_t n;
	int fd;

	if (strncmp(name, "loop", 4) != 0 && strncmp(name, "ram", 3) != 0 && strncmp(name, "nbd", 3) != 0)
		return false;
	if (snprintf(path, sizeof(path), "%s/%s/size", sysblock, name) >= (int)sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	if (close(fd) != 0 || n <= 0)
		return false;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10) == 0;
}

/* live.iso=: the ISO file lies on a disk's filesystem; our own loop devices and RAM disks are never that disk. */
static bool never_iso_host(const char *sysblock, const char *name)
{
	(void)sysblock;
	return strncmp(name, "loop", 4) == 0 || strncmp(name, "ram", 3) == 0 || strncmp(name, "zram", 4) == 0;
}

/* A whole disk whose MBR lists partitions that are not usable yet: the kernel registers a disk before
 * it has scanned its partition table, and devtmpfs makes the nodes a moment after sysfs shows them.
 * Taking the whole disk then would claim it and lock its partitions (the persistence store) out, so
 * it is passed over for a few rounds. CD drives cannot have partitions (ext_range 1) and never wait. */
#define PARTSCAN_ROUNDS 30
static int partitions_pending(const char *sysblock, const char *devdir, const char *name, const char *dev,
			      const struct seen *seen, int nseen)
{
	char path[PATH_LEN], text[16];
	unsigned char mbr[512];
	struct dirent *e;
	DIR *d;
	size_t nl = strlen(name);
	int fd, i, listed = 0, missing = 0, rc;

	if (disk_is_partition(sysblock, name))
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s/ext_range", sysblock, name) >= (int)sizeof(path) ||
	    read_text(path, text, sizeof(text)) < 0 || strtol(text, NULL, 10) <= 1)
		return 0;
	if ((fd = open(dev, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	rc = disk_read_mbr(fd, mbr);
	if (close(fd) != 0 || rc != 0) {
		dbg("%s: no MBR", name);
		return 0;
	}
	if (!mbr_has_entries(mbr) || snprintf(path, sizeof(path), "%s/%s", sysblock, name) >= (int)sizeof(path) ||
	    !(d = opendir(path)))
		return 0;
	while ((e = readdir(d)) != NULL) {
		char node[PATH_LEN];

		if (strncmp(e->d_name, name, nl) != 0 || e->d_name[nl] == '\0')
			continue;
		listed = 1;
		if (snprintf(node, sizeof(node), "%s/%s", devdir, e->d_name) < (int)sizeof(node) &&
		    access(node, F_OK) != 0)
			missing = 1;
		/* appeared after this round listed the devices: the next round probes it first */
		for (i = 0; i < nseen && strcmp(seen[i].name, e->d_name) != 0; i++)
			;
		missing |= i == nseen;
	}
	if (closedir(d) != 0)
		return 0;
	dbg("%s: MBR lists partitions; sysfs %s them%s", name, listed ? "has" : "does not have",
	    missing ? ", some not probed yet" : "");
	return !listed || missing;
}

/* One pass over the block devices; 1 when the medium was found. */
static int scan_once(const struct plan *p, struct boot *b, const char *sysblock, const char *devdir, const char *isodir,
		     struct seen *seen, int *nseen)
{
	static char names[MAX_SEEN][DISK_NAME_LEN];
	int n = disk_list(sysblock, NULL, isodir ? never_iso_host : idle_virtual, names, MAX_SEEN), i;

	*nseen = 0;
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		memcpy(seen[i].name, names[i], sizeof(seen[i].name));
		seen[i].reason[0] = '\0';
	}
	qsort(seen, (size_t)n, sizeof(seen[0]), by_name);
	*nseen = n;
	for (i = 0; i < n; i++) {
		char dev[PATH_LEN];
		struct iso_id id;

		if (snprintf(dev, sizeof(dev), "%s/%s", devdir, seen[i].name) >= (int)sizeof(dev)) {
			text_fmt(seen[i].reason, sizeof(seen[i].reason), "device path too long");
			continue;
		}
		if (isodir) {
			if (probe_iso_host(p, b, dev, isodir, &id, seen[i].reason, sizeof(seen[i].reason)) == 1) {
				b->id = id;
				iso_also_on(p, b, seen, i + 1, n, devdir, isodir);
				return 1;
			}
		} else if (probe_device(dev, &p->want, &id, seen[i].reason, sizeof(seen[i].reason)) == 1) {
			static int deferred;

			if (deferred < PARTSCAN_ROUNDS &&
			    partitions_pending(sysblock, devdir, seen[i].name, dev, seen, n)) {
				deferred++;
				text_fmt(seen[i].reason, sizeof(seen[i].reason),
					 "matches, waiting for its partitions to appear");
				dbg("%s: %s", seen[i].name, seen[i].reason);
				continue;
			}
			text_fmt(b->device, sizeof(b->device), "%s", dev);
			b->id = id;
			return 1;
		}
		dbg("%s: %s", seen[i].name, seen[i].reason);
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
		return 0; /* cannot happen for CLOCK_MONOTONIC; the loop stays bounded by its round count */
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int discover_medium(const struct plan *p, struct boot *b, const char *sysblock, const char *devdir)
{
	static struct seen seen[MAX_SEEN];
	long long start = now_ms(), deadline = start + (long long)p->timeout * 1000;
	long long rounds = 0, max_rounds = (long long)p->timeout * (1000 / POLL_MS) + 1;
	long long next_note = start + 5000;
	char isodir[PATH_LEN + 16];
	int nseen = 0, i, r;

	if (p->iso_path[0]) {
		if (path_fmt(isodir, sizeof(isodir), "%s/iso-host", p->run_live) != 0 || mkdir_p(isodir, 0755) != 0)
			return -1;
		/* a retry from the rescue shell: what the last try left goes first */
		discover_done();
		if (umount(isodir) == 0)
			msg("unmounted %s left by an earlier try", isodir);
		b->iso_host[0] = b->iso_fstype[0] = '\0';
		msg("looking for the ISO file %s (medium %s) on every disk's partitions (up to %u s)", p->iso_path,
		    p->medium_spec, p->timeout);
	} else {
		msg("looking for the medium %s (up to %u s)", p->medium_spec, p->timeout);
	}
	for (;;) {
		r = scan_once(p, b, sysblock, devdir, p->iso_path[0] ? isodir : NULL, seen, &nseen);
		if (r < 0)
			return -1;
		if (r == 1 && p->iso_path[0]) {
			msg("medium %s found: the file %s on %s (%s, mounted read-only on %s) via %s (label %s, UUID %s)",
			    p->medium_spec, p->iso_path, b->iso_host, b->iso_fstype, isodir, b->device, b->id.label,
			    b->id.uuid);
			return 0;
		}
		if (r == 1) {
			msg("medium %s found on %s (label %s, UUID %s)", p->medium_spec, b->device, b->id.label,
			    b->id.uuid);
			return 0;
		}
		/* Both bounds: the clock, and the number of rounds in case the clock misbehaves. */
		if (now_ms() >= deadline || ++rounds >= max_rounds)
			break;
		if (now_ms() >= next_note) {
			msg("still waiting for the medium %s (%lld s)", p->medium_spec, (now_ms() - start) / 1000);
			next_note += 5000;
		}
		modload_wait(b->mods, POLL_MS);
	}
	if (p->iso_path[0])
		msg("the ISO file %s (medium %s) is on no partition after %u s; block devices searched:", p->iso_path,
		    p->medium_spec, p->timeout);
	else
		msg("medium %s not found after %u s; block devices seen:", p->medium_spec, p->timeout);
	if (nseen == 0)
		msg("  (none: is the driver for the disk or CD controller in the kernel?)");
	for (i = 0; i < nseen; i++)
		msg("  %s: %s", seen[i].name, seen[i].reason);
	modload_report_unbound(b->mods);
	if (p->iso_path[0])
		return fail(ENOENT, "find the ISO file %s (live.iso=)", p->iso_path);
	return fail(ENODEV, "find the medium %s", p->medium_spec);
}

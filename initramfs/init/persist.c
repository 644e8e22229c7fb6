/* live.persist=: the persistence store as the overlay's upper layer. Nothing here ever formats,
 * repairs by guesswork or deletes: a store that is not clean is left alone and the boot goes on
 * with tmpfs, saying why. */
#include "persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kapi.h"
#include "log.h"
#include "stack.h"
#include "util.h"

#define STORE_LABEL "liveunion-rw"
#define STORE_FILE "liveunion-rw.img"
#define STORE_DIR "liveunion-v1"
#define E2FSCK "/sbin/e2fsck"
#define SYSBLOCK "/sys/class/block"
#define MAX_PARTS 32

struct sb {
	int ext;
	int recover; /* the journal has to be replayed */
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

static unsigned le16(const unsigned char *b) { return (unsigned)b[0] | (unsigned)b[1] << 8; }
static unsigned long le32(const unsigned char *b) { return le16(b) | (unsigned long)le16(b + 2) << 16; }

static int read_sb(const char *dev, struct sb *s)
{
	unsigned char b[1024];
	ssize_t n;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	memset(s, 0, sizeof(*s));
	if (fd < 0)
		return -1;
	n = pread(fd, b, sizeof(b), 1024);
	if (close(fd) != 0 || n != (ssize_t)sizeof(b))
		return -1;
	if (le16(b + 0x38) != 0xEF53)
		return 0;
	s->ext = 1;
	s->recover = (le32(b + 0x60) & 0x4) != 0;
	memcpy(s->label, b + 0x78, 16);
	s->label[16] = '\0';
	text_fmt(s->uuid, sizeof(s->uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0x68],
		 b[0x69], b[0x6a], b[0x6b], b[0x6c], b[0x6d], b[0x6e], b[0x6f], b[0x70], b[0x71], b[0x72], b[0x73], b[0x74],
		 b[0x75], b[0x76], b[0x77]);
	return 0;
}

static bool is_partition(const char *name)
{
	char path[PATH_LEN];

	return snprintf(path, sizeof(path), SYSBLOCK "/%s/partition", name) < (int)sizeof(path) && access(path, F_OK) == 0;
}

/* The whole disk a block device belongs to: sda for sda1 and for sda. */
static int disk_of(const char *dev, char *disk, size_t len)
{
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	char path[PATH_LEN], *real, *slash;

	text_fmt(disk, len, "%s", name);
	if (!is_partition(name))
		return 0;
	if (snprintf(path, sizeof(path), SYSBLOCK "/%s", name) >= (int)sizeof(path) || !(real = realpath(path, NULL)))
		return -1;
	slash = strrchr(real, '/');
	if (slash) {
		*slash = '\0';
		slash = strrchr(real, '/');
	}
	if (slash)
		text_fmt(disk, len, "%s", slash + 1);
	free(real);
	return slash ? 0 : -1;
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* Partitions of disk (sorted), or of every block device when disk is NULL. */
static int list_devs(const char *disk, char names[][32], int max)
{
	char dir[PATH_LEN];
	DIR *d;
	struct dirent *e;
	int n = 0;

	text_fmt(dir, sizeof(dir), disk ? SYSBLOCK "/%s" : SYSBLOCK, disk);
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 32)
			continue;
		if (disk && (strncmp(e->d_name, disk, strlen(disk)) != 0 || !is_partition(e->d_name)))
			continue;
		memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
	}
	if (closedir(d) != 0)
		msg("close %s: %s", dir, strerror(errno));
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	return n;
}

static int loop_rw(const char *file, bool ro, unsigned long long offset, unsigned long long size, char *dev, size_t len)
{
	struct live_loop_config cfg;
	int ctl, lfd, ffd, nr, ok = -1;

	if ((ffd = open(file, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC)) < 0)
		return fail(errno, "open %s", file);
	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) < 0 || (nr = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
		fail(errno, "get a free loop device for %s", file);
		goto out;
	}
	text_fmt(dev, len, "/dev/loop%d", nr);
	if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) < 0) {
		fail(errno, "open %s", dev);
		goto out;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (uint32_t)ffd;
	/* autoclear: unmounting the store frees the device and with it the file on the FAT */
	cfg.info.lo_flags = LIVE_LO_FLAGS_AUTOCLEAR | (ro ? LIVE_LO_FLAGS_READ_ONLY : 0);
	cfg.info.lo_offset = offset;
	cfg.info.lo_sizelimit = size;
	text_fmt((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", file);
	ok = ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0 ? lfd : fail(errno, "attach %s to %s", file, dev);
	if (ok < 0 && close(lfd) != 0)
		msg("close %s: %s", dev, strerror(errno));
out:
	if (ctl >= 0 && close(ctl) != 0)
		msg("close /dev/loop-control: %s", strerror(errno));
	if (close(ffd) != 0)
		msg("close %s: %s", file, strerror(errno));
	return ok;
}

/* Where the image file lies on the FAT/exFAT partition, if in one piece: *offset in bytes. The kernel's
 * own block map (FIBMAP) is asked at every cluster, where a FAT file may jump. 0 contiguous, -1 not. */
static int file_extent(const char *part, int fd, unsigned long long fsize, unsigned long long *offset)
{
	unsigned char boot[512];
	unsigned long long nblocks, b, step = 1, cluster = 0;
	int bsz = 0, first, phys, pfd;

	if ((pfd = open(part, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(pfd, boot, sizeof(boot), 0) == (ssize_t)sizeof(boot)) {
		if (memcmp(boot + 3, "EXFAT   ", 8) == 0 && boot[0x6c] < 13 && boot[0x6d] < 26)
			cluster = 1ULL << (boot[0x6c] + boot[0x6d]);
		else
			cluster = (unsigned long long)le16(boot + 0x0b) * boot[0x0d];
	}
	if (close(pfd) != 0 || ioctl(fd, LIVE_FIGETBSZ, &bsz) != 0 || bsz <= 0 || fsize == 0)
		return -1;
	if (cluster >= (unsigned long long)bsz && cluster % (unsigned long long)bsz == 0)
		step = cluster / (unsigned long long)bsz;
	nblocks = (fsize + (unsigned long long)bsz - 1) / (unsigned long long)bsz;
	first = 0;
	if (ioctl(fd, LIVE_FIBMAP, &first) != 0 || first <= 0)
		return -1;
	for (b = step; b <= nblocks; b += step) {
		phys = (int)(b < nblocks ? b : nblocks - 1);
		if (ioctl(fd, LIVE_FIBMAP, &phys) != 0 || (unsigned long long)phys != (unsigned long long)first + (b < nblocks ? b : nblocks - 1))
			return -1;
		if (b >= nblocks)
			break;
	}
	*offset = (unsigned long long)first * (unsigned long long)bsz;
	return 0;
}

/* Look for path on a FAT/exFAT partition. A contiguous image file is attached straight from the
 * partition (loop with offset and size): the FAT itself is never mounted read-write, so it is never left
 * "dirty" by a power-off. A fragmented one goes through a read-write mount of the FAT, which then
 * stays mounted on s->host. Returns the loop fd (close it once the store is mounted) or -1. */
static int image_on(const char *part, const char *path, struct store *s)
{
	static const char *const types[] = {"vfat", "exfat"};
	char file[PATH_LEN * 2];
	unsigned long long offset = 0, fsize = 0;
	struct stat st;
	size_t i;
	int fd, ffd, direct = -1;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (mount(part, s->host, types[i], MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) == 0)
			break;
	if (i == sizeof(types) / sizeof(types[0]))
		return -1;
	text_fmt(file, sizeof(file), "%s/%s", s->host, path[0] == '/' ? path + 1 : path);
	if ((ffd = open(file, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (fstat(ffd, &st) == 0 && S_ISREG(st.st_mode)) {
			fsize = (unsigned long long)st.st_size;
			direct = file_extent(part, ffd, fsize, &offset);
		}
		if (close(ffd) != 0)
			msg("close %s: %s", file, strerror(errno));
	}
	if (ffd < 0 || fsize == 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if (direct == 0) {
		if (umount(s->host) != 0) {
			msg("umount %s: %s", s->host, strerror(errno));
			return -1;
		}
		if ((fd = loop_rw(part, s->ro, offset, fsize, s->dev, sizeof(s->dev))) < 0) {
			msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
			return -1;
		}
		text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s, in one piece at byte %llu) via %s", path, part + 5,
			 types[i], offset, s->dev);
		return fd;
	}
	msg("persistence: %s on /dev/%s is fragmented: used through the %s filesystem, which stays mounted until "
	    "power-off (other systems may then call it not cleanly unmounted)", path, part + 5, types[i]);
	if (!s->ro && mount(NULL, s->host, NULL, MS_REMOUNT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) != 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if ((fd = loop_rw(file, s->ro, 0, 0, s->dev, sizeof(s->dev))) < 0) {
		msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s) via %s", path, part + 5, types[i], s->dev);
	return fd;
}

static unsigned long long le64(const unsigned char *b) { return le32(b) | (unsigned long long)le32(b + 4) << 32; }

/* PARTUUID of a partition the way the kernel numbers it: the GPT entry's unique GUID when the disk
 * has a GPT that the MBR protects (0xEE, also in hybrid ISO images), else the MBR signature-NN. */
static int part_uuid(const char *name, char *out, size_t len)
{
	char disk[32], path[PATH_LEN], num[16], lbs_text[16];
	unsigned char mbr[512], gpt[512], e[128];
	unsigned long partn, lbs = 512;
	bool pmbr = false;
	int fd, i, ok = -1;

	if (disk_of(name, disk, sizeof(disk)) != 0 || strcmp(disk, name) == 0)
		return -1;
	text_fmt(path, sizeof(path), SYSBLOCK "/%s/partition", name);
	if (read_text(path, num, sizeof(num)) < 0 || (partn = strtoul(num, NULL, 10)) == 0)
		return -1;
	text_fmt(path, sizeof(path), SYSBLOCK "/%s/queue/logical_block_size", disk);
	if (read_text(path, lbs_text, sizeof(lbs_text)) >= 0 && strtoul(lbs_text, NULL, 10) >= 512)
		lbs = strtoul(lbs_text, NULL, 10);
	text_fmt(path, sizeof(path), "/dev/%s", disk);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(fd, mbr, sizeof(mbr), 0) != (ssize_t)sizeof(mbr) || mbr[510] != 0x55 || mbr[511] != 0xAA)
		goto out;
	for (i = 0; i < 4; i++)
		pmbr |= mbr[446 + 16 * i + 4] == 0xEE;
	if (pmbr && pread(fd, gpt, sizeof(gpt), (off_t)lbs) == (ssize_t)sizeof(gpt) && memcmp(gpt, "EFI PART", 8) == 0) {
		unsigned long long at = le64(gpt + 72) * lbs + (partn - 1) * le32(gpt + 84);

		if (partn > le32(gpt + 80) || le32(gpt + 84) < 128 || pread(fd, e, sizeof(e), (off_t)at) != (ssize_t)sizeof(e))
			goto out;
		text_fmt(out, len, "%08lx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", le32(e + 16), le16(e + 20),
			 le16(e + 22), e[24], e[25], e[26], e[27], e[28], e[29], e[30], e[31]);
	} else {
		text_fmt(out, len, "%08lx-%02lx", le32(mbr + 440), partn);
	}
	ok = 0;
out:
	if (close(fd) != 0)
		msg("close %s: %s", path, strerror(errno));
	return ok;
}

/* Find the store; 1 found, 0 not (why in why). *loopfd gets the image file's loop fd, or -1. */
static int find_store(const struct plan *p, struct store *s, int *loopfd, char *why, size_t wlen)
{
	static char names[MAX_PARTS * 2][32];
	const char *spec = p->persist;
	char disk[32], dev[64];
	struct sb sb;
	int n, i;

	enum persist_kind kind = persist_kind(spec);

	*loopfd = -1;
	if (kind == PK_LABEL || kind == PK_UUID || kind == PK_PARTUUID) {
		const char *want = strchr(spec, '=') + 1;
		char pu[40];

		n = list_devs(NULL, names, MAX_PARTS * 2);
		for (i = 0; i < n; i++) {
			text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
			if (kind == PK_PARTUUID && (part_uuid(names[i], pu, sizeof(pu)) != 0 || strcasecmp(pu, want) != 0))
				continue;
			if (read_sb(dev, &sb) != 0 || !sb.ext)
				continue;
			if (kind == PK_PARTUUID || (kind == PK_LABEL ? strcmp(sb.label, want) == 0 : strcasecmp(sb.uuid, want) == 0)) {
				text_fmt(s->dev, sizeof(s->dev), "%s", dev);
				text_fmt(s->what, sizeof(s->what), "%s (%s)", dev, spec);
				return 1;
			}
		}
		text_fmt(why, wlen, "no ext2/3/4 filesystem with %s", spec);
		return 0;
	}
	if (disk_of(p->device, disk, sizeof(disk)) != 0) {
		text_fmt(why, wlen, "cannot tell which disk %s is on", p->device);
		return 0;
	}
	/* auto and file: look only at the disk we booted from: a stranger's stick with the right
	 * label must never be mounted (any other disk only when named by LABEL=/UUID=). */
	n = list_devs(disk, names, MAX_PARTS);
	if (kind != PK_FILE) {
		for (i = 0; i < n; i++) {
			text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
			if (read_sb(dev, &sb) == 0 && sb.ext && strcmp(sb.label, STORE_LABEL) == 0) {
				text_fmt(s->dev, sizeof(s->dev), "%s", dev);
				text_fmt(s->what, sizeof(s->what), "%s (LABEL=" STORE_LABEL ")", dev);
				return 1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
		if ((*loopfd = image_on(dev, kind == PK_FILE ? spec + 5 : STORE_FILE, s)) >= 0)
			return 1;
	}
	if (kind == PK_FILE)
		text_fmt(why, wlen, "no %s on the FAT/exFAT partitions of /dev/%s", spec + 5, disk);
	else
		text_fmt(why, wlen, "no partition labelled " STORE_LABEL " and no " STORE_FILE " on /dev/%s", disk);
	return 0;
}

static int run(const char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* -n first: it never writes, so a store with errors stays byte for byte as it was. Only a
 * journal that needs replaying (the normal state after a power cut) gets e2fsck -p. */
static int check_store(const struct store *s)
{
	const char *const ncheck[] = {E2FSCK, "-n", s->dev, NULL}, *const pcheck[] = {E2FSCK, "-p", s->dev, NULL};
	struct sb sb;
	int rc;

	if (access(E2FSCK, X_OK) != 0) {
		msg("persistence: %s: no " E2FSCK " in the initramfs, so the store cannot be checked", s->what);
		return -1;
	}
	if (read_sb(s->dev, &sb) != 0)
		return -1;
	rc = run(sb.recover && !s->ro ? pcheck : ncheck);
	if (rc == 0 || (sb.recover && !s->ro && rc < 4))
		return 0;
	msg("persistence: %s: e2fsck %s exit %d: errors that need a human (run e2fsck %s by hand); the store is "
	    "left untouched and not mounted, changes go to tmpfs", s->what, sb.recover && !s->ro ? "-p" : "-n", rc,
	    s->dev);
	return -1;
}

static void now_text(char *buf, size_t len, const char *fmt)
{
	struct tm tm;
	time_t t = time(NULL);

	if (!gmtime_r(&t, &tm) || strftime(buf, len, fmt, &tm) == 0)
		text_fmt(buf, len, "unknown");
}

/* meta: key=value, written to a temporary file and renamed, so a power cut leaves old or new. */
static int update_meta(const struct plan *p, const char *vdir)
{
	char path[PATH_LEN * 2], tmp[PATH_LEN * 2 + 8], old[1024], created[40], prev[80] = "", now[40], body[1200];
	const char *k;
	int fd, n;

	now_text(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ");
	text_fmt(path, sizeof(path), "%s/meta", vdir);
	text_fmt(created, sizeof(created), "%s", now);
	if (read_text(path, old, sizeof(old)) >= 0) {
		if ((k = strstr(old, "created=")) != NULL)
			text_fmt(created, sizeof(created), "%.*s", (int)strcspn(k + 8, "\n"), k + 8);
		if ((k = strstr(old, "image=")) != NULL && (k == old || k[-1] == '\n'))
			text_fmt(prev, sizeof(prev), "%.*s", (int)strcspn(k + 6, "\n"), k + 6);
	}
	if (prev[0] && strcmp(prev, p->id.uuid) != 0)
		msg("persistence: the store was made for image %s, this is %s: used anyway (overlay index and metacopy, "
		    "unsafe with a changed lower layer, are not used); recorded in the meta file", prev, p->id.uuid);
	n = snprintf(body, sizeof(body), "format=1\nimage=%s\ncreated=%s\nlast_used=%s\n%s%s%s%s", p->id.uuid, created, now,
		     prev[0] && strcmp(prev, p->id.uuid) ? "previous_image=" : "", prev[0] && strcmp(prev, p->id.uuid) ? prev : "",
		     prev[0] && strcmp(prev, p->id.uuid) ? "\nimage_changed=" : "", prev[0] && strcmp(prev, p->id.uuid) ? now : "");
	if (n < 0 || (size_t)n >= sizeof(body) - 1)
		return fail(E2BIG, "meta text");
	if (prev[0] && strcmp(prev, p->id.uuid))
		body[n++] = '\n';
	text_fmt(tmp, sizeof(tmp), "%s.new", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return fail(errno, "create %s", tmp);
	if (write(fd, body, (size_t)n) != n || fsync(fd) != 0) {
		int e = errno;

		if (close(fd) != 0)
			msg("close %s: %s", tmp, strerror(errno));
		return fail(e ? e : EIO, "write %s", tmp);
	}
	if (close(fd) != 0)
		return fail(errno, "close %s", tmp);
	if (rename(tmp, path) != 0)
		return fail(errno, "rename %s to %s", tmp, path);
	return 0;
}

static int mkdir_one(const char *dir, const char *sub)
{
	char path[PATH_LEN * 2];

	if (path_fmt(path, sizeof(path), "%s/%s", dir, sub) != 0)
		return -1;
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fail(errno, "mkdir %s", path);
	return 0;
}

/* live.persist.paths, else the store's own paths file: the clean list goes back into the plan. */
static int select_paths(struct plan *p, const char *vdir)
{
	static char paths[MAX_PATHS][PATH_LEN];
	char file[PATH_LEN * 2], text[VALUE_MAX], err[300];
	const char *from = "live.persist.paths";
	int n, i;

	text_fmt(text, sizeof(text), "%s", p->persist_paths);
	if (!text[0]) {
		text_fmt(file, sizeof(file), "%s/paths.conf", vdir);
		if (read_text(file, text, sizeof(text)) < 0)
			return 0;
		from = STORE_DIR "/paths.conf";
	}
	n = persist_paths_parse(text, paths, MAX_PATHS, err, sizeof(err));
	if (err[0])
		msg("persistence: %s: ignored (not an absolute path of the live root, or under /proc, /sys, /dev, /run): %s",
		    from, err);
	p->persist_paths[0] = '\0';
	for (i = 0; i < n; i++)
		if (strlen(p->persist_paths) + strlen(paths[i]) + 2 < sizeof(p->persist_paths))
			strcat(strcat(p->persist_paths, i ? "," : ""), paths[i]);
	if (n == 0)
		msg("persistence: %s names no usable path: everything persists", from);
	return n;
}

/* After the overlay: each persistent path gets its own overlay, the same layers below (their copy of
 * that directory) and an upper in the store, over the volatile root. */
int persist_paths_mount(struct plan *p)
{
	static char paths[MAX_PATHS][PATH_LEN], opts[4096];
	char err[300], key[PATH_LEN], base[PATH_LEN * 2], up[PATH_LEN * 3], wk[PATH_LEN * 3], target[PATH_LEN * 2],
		lower[PATH_LEN * 2], empty[PATH_LEN + 16];
	struct stat st;
	int n, i, j, bad = 0;
	size_t used;

	if (!p->persist_paths_active)
		return 0;
	n = persist_paths_parse(p->persist_paths, paths, MAX_PATHS, err, sizeof(err));
	for (i = 0; i < n; i++) {
		if (persist_path_key(paths[i], key, sizeof(key)) != 0 ||
		    path_fmt(base, sizeof(base), "%s/store/" STORE_DIR "/paths/%s", p->run_live, key) != 0 ||
		    path_fmt(up, sizeof(up), "%s/upper", base) != 0 || path_fmt(wk, sizeof(wk), "%s/work", base) != 0 ||
		    path_fmt(target, sizeof(target), "%s%s", p->newroot, paths[i]) != 0 || mkdir_p(up, 0755) != 0 ||
		    mkdir_p(wk, 0755) != 0)
			goto bad;
		if (lstat(target, &st) == 0 && !S_ISDIR(st.st_mode)) {
			fail(ENOTDIR, "persist %s: it is not a directory in the live root", paths[i]);
			goto bad;
		}
		if (mkdir_p(target, 0755) != 0)
			goto bad;
		used = (size_t)snprintf(opts, sizeof(opts), "lowerdir=");
		for (j = p->nlayers - 1; j >= 0; j--) {
			if (path_fmt(lower, sizeof(lower), "%s%s", p->layer[j].dir, paths[i]) != 0)
				goto bad;
			if (stat(lower, &st) != 0 || !S_ISDIR(st.st_mode))
				continue;
			used += (size_t)snprintf(opts + used, sizeof(opts) - used, "%s%s", used > 9 ? ":" : "", lower);
		}
		if (used == 9) { /* in no layer: an empty directory stands in for the missing lower */
			if (path_fmt(empty, sizeof(empty), "%s/empty", p->run_live) != 0 || mkdir_p(empty, 0755) != 0)
				goto bad;
			used += (size_t)snprintf(opts + used, sizeof(opts) - used, "%s", empty);
		}
		if (used >= sizeof(opts) ||
		    path_fmt(opts + used, sizeof(opts) - used, ",upperdir=%s,workdir=%s,xino=on", up, wk) != 0 ||
		    do_mount("overlay", target, "overlay", 0, opts) != 0)
			goto bad;
		msg("persistence: %s persists (store %s)", paths[i], base + strlen(p->run_live) + 1);
		continue;
bad:
		/* loud, never silent; the rest of the system still boots */
		msg("persistence: %s is NOT persistent: %s: %s", paths[i], fail_what(), strerror(fail_errno()));
		fail_clear();
		bad++;
	}
	if (bad)
		text_fmt(p->persist_result + strlen(p->persist_result), sizeof(p->persist_result) - strlen(p->persist_result),
			 "; %d of %d paths NOT persistent (see the console)", bad, n);
	return 0;
}

/* Mounted store -> versioned directory ready, reset done, bound on run_live/upper (or, read-only,
 * its upper added as the top lower layer). */
static int use_store(struct plan *p, struct store *s, bool reset)
{
	char vdir[PATH_LEN * 2], upper[PATH_LEN * 2], aside[PATH_LEN * 2 + 40], stamp[40], target[PATH_LEN + 16];
	struct statvfs vfs;
	struct layer *l;

	if (path_fmt(vdir, sizeof(vdir), "%s/" STORE_DIR, s->dir) != 0 ||
	    path_fmt(upper, sizeof(upper), "%s/upper", vdir) != 0)
		return -1;
	if (s->ro) {
		if (access(upper, F_OK) != 0) {
			msg("persistence: %s has no " STORE_DIR "/upper yet: nothing to add read-only", s->what);
			return 0;
		}
		if (p->nlayers == MAX_LAYERS)
			return fail(E2BIG, "add the store as a layer: already %d layers", MAX_LAYERS);
		l = &p->layer[p->nlayers];
		memset(l, 0, sizeof(*l));
		text_fmt(l->name, sizeof(l->name), "persist");
		text_fmt(l->file, sizeof(l->file), "%s", s->dev);
		text_fmt(l->dir, sizeof(l->dir), "%s", upper);
		l->loop = -1;
		p->nlayers++;
		return 0;
	}
	if (mkdir_one(s->dir, STORE_DIR) != 0 || mkdir_one(vdir, "work") != 0)
		return -1;
	if (reset) {
		static const char *const parts[] = {"upper", "paths"};
		char from[PATH_LEN * 2];
		size_t i;

		now_text(stamp, sizeof(stamp), "%Y%m%d-%H%M%S");
		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			if (path_fmt(from, sizeof(from), "%s/%s", vdir, parts[i]) != 0)
				return -1;
			if (access(from, F_OK) != 0)
				continue;
			text_fmt(aside, sizeof(aside), "%s.reset-%s", from, stamp);
			if (rename(from, aside) != 0)
				return fail(errno, "move %s aside to %s", from, aside);
			msg("persistence: live.persist.reset: previous changes kept in %s", aside + strlen(s->dir) + 1);
		}
	}
	if (mkdir_one(vdir, "upper") != 0 || update_meta(p, vdir) != 0)
		return -1;
	if (select_paths(p, vdir) > 0) {
		p->persist_paths_active = true;
		return 0;
	}
	if (path_fmt(target, sizeof(target), "%s/upper", p->run_live) != 0 || mkdir_p(target, 0755) != 0)
		return -1;
	if (do_mount(vdir, target, NULL, MS_BIND, NULL) != 0)
		return -1;
	text_fmt(p->upper_kind, sizeof(p->upper_kind), "store");
	if (statvfs(vdir, &vfs) == 0)
		p->upper_bytes = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	return 0;
}

int persist_upper(struct plan *p)
{
	struct store s;
	struct statvfs vfs;
	char why[300];
	int loopfd, found;
	bool ro = strstr(p->persist_flags, "ro") != NULL, reset = strstr(p->persist_flags, "reset") != NULL;

	memset(&s, 0, sizeof(s));
	s.ro = ro;
	if (persist_kind(p->persist) == PK_OFF) {
		text_fmt(p->persist_result, sizeof(p->persist_result), "none: live.persist=off");
		msg("persistence: %s", p->persist_result);
		return stack_upper(p);
	}
	if (persist_kind(p->persist) == PK_BAD) {
		text_fmt(p->persist_result, sizeof(p->persist_result),
			 "none: live.persist=%s is not auto, off, LABEL=x, UUID=x, PARTUUID=x or file:PATH", p->persist);
		msg("persistence: %s", p->persist_result);
		return stack_upper(p);
	}
	if (path_fmt(s.dir, sizeof(s.dir), "%s/store", p->run_live) != 0 ||
	    path_fmt(s.host, sizeof(s.host), "%s/store-host", p->run_live) != 0 || mkdir_p(s.dir, 0755) != 0 ||
	    mkdir_p(s.host, 0755) != 0)
		return -1;
	found = find_store(p, &s, &loopfd, why, sizeof(why));
	if (!found) {
		text_fmt(p->persist_result, sizeof(p->persist_result), "none: %s", why);
		msg("persistence: %s", p->persist_result);
		return stack_upper(p);
	}
	if (check_store(&s) == 0 && do_mount(s.dev, s.dir, "ext4", s.ro ? MS_RDONLY : 0, NULL) == 0) {
		if (use_store(p, &s, reset) == 0) {
			unsigned long long mib = statvfs(s.dir, &vfs) == 0 ? (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 20 : 0;

			text_fmt(p->persist_result, sizeof(p->persist_result), "%s %s, ext4, %llu MiB free%s%s%s",
				 s.ro ? "read-only" : "store", s.what, mib, s.ro ? ", changes go to tmpfs" : "",
				 p->persist_paths_active ? ", only " : "", p->persist_paths_active ? p->persist_paths : "");
			msg("persistence: %s, " STORE_DIR " on %s/%s", p->persist_result, p->run_live,
			    s.ro ? "layers" : p->persist_paths_active ? "store" : "upper");
			if (loopfd >= 0 && close(loopfd) != 0)
				msg("close %s: %s", s.dev, strerror(errno));
			return s.ro || p->persist_paths_active ? stack_upper(p) : 0;
		}
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
		if (umount(s.dir) != 0)
			msg("umount %s: %s", s.dir, strerror(errno));
	} else if (fail_what()[0]) {
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
	}
	text_fmt(p->persist_result, sizeof(p->persist_result), "none: %s not usable (see above)", s.what);
	if (loopfd >= 0 && close(loopfd) != 0)
		msg("close %s: %s", s.dev, strerror(errno));
	if (loopfd >= 0 && umount(s.host) != 0)
		msg("umount %s: %s", s.host, strerror(errno));
	return stack_upper(p);
}

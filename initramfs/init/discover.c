#include "discover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disk.h"
#include "log.h"
#include "modload.h"
#include "util.h"

#define MAX_SEEN 256
#define POLL_MS 100

struct seen {
	char name[DISK_NAME_LEN];
	char reason[200];
};

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
	if (iso_id_parse(pvd, sizeof(pvd), id) != 0) {
		text_fmt(reason, rlen, "not ISO9660 (no CD001 primary volume descriptor)");
		return 0;
	}
	return medium_match(want, id, reason, rlen);
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

/* Unused loop and ram devices are always there and never the medium; listing them would bury the real clue. */
static bool idle_virtual(const char *sysblock, const char *name)
{
	char path[PATH_LEN], buf[32];
	ssize_t n;
	int fd;

	if (strncmp(name, "loop", 4) != 0 && strncmp(name, "ram", 3) != 0)
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
static int scan_once(struct plan *p, const char *sysblock, const char *devdir, struct seen *seen, int *nseen)
{
	static char names[MAX_SEEN][DISK_NAME_LEN];
	int n = disk_list(sysblock, NULL, idle_virtual, names, MAX_SEEN), i;

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
		if (probe_device(dev, &p->want, &id, seen[i].reason, sizeof(seen[i].reason)) == 1) {
			static int deferred;

			if (deferred < PARTSCAN_ROUNDS &&
			    partitions_pending(sysblock, devdir, seen[i].name, dev, seen, n)) {
				deferred++;
				text_fmt(seen[i].reason, sizeof(seen[i].reason),
					 "matches, waiting for its partitions to appear");
				dbg("%s: %s", seen[i].name, seen[i].reason);
				continue;
			}
			text_fmt(p->device, sizeof(p->device), "%s", dev);
			p->id = id;
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

int discover_medium(struct plan *p, const char *sysblock, const char *devdir)
{
	static struct seen seen[MAX_SEEN];
	long long start = now_ms(), deadline = start + (long long)p->timeout * 1000;
	long long rounds = 0, max_rounds = (long long)p->timeout * (1000 / POLL_MS) + 1;
	long long next_note = start + 5000;
	int nseen = 0, i, r;

	msg("looking for the medium %s (up to %u s)", p->medium_spec, p->timeout);
	for (;;) {
		r = scan_once(p, sysblock, devdir, seen, &nseen);
		if (r < 0)
			return -1;
		if (r == 1) {
			msg("medium %s found on %s (label %s, UUID %s)", p->medium_spec, p->device, p->id.label,
			    p->id.uuid);
			return 0;
		}
		/* Both bounds: the clock, and the number of rounds in case the clock misbehaves. */
		if (now_ms() >= deadline || ++rounds >= max_rounds)
			break;
		if (now_ms() >= next_note) {
			msg("still waiting for the medium %s (%lld s)", p->medium_spec, (now_ms() - start) / 1000);
			next_note += 5000;
		}
		struct timespec ts = {0, POLL_MS * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		modload_poll();
	}
	msg("medium %s not found after %u s; block devices seen:", p->medium_spec, p->timeout);
	if (nseen == 0)
		msg("  (none: is the driver for the disk or CD controller in the kernel?)");
	for (i = 0; i < nseen; i++)
		msg("  %s: %s", seen[i].name, seen[i].reason);
	modload_report_unbound();
	return fail(ENODEV, "find the medium %s", p->medium_spec);
}

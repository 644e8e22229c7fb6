#include "toram.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/cdrom.h>
#include <linux/fs.h>

#include "liveunion/contract.h"
#include "log.h"
#include "loop.h"
#include "progress.h"
#include "ramcopy.h"
#include "util.h"

/* A CD drive opens its tray; anything else (a USB stick) just may be pulled now. */
static const char *eject(const char *device)
{
	static char why[160];
	int fd = open(device, O_RDONLY | O_NONBLOCK | O_CLOEXEC), r;

	if (fd < 0) {
		text_fmt(why, sizeof(why), "not ejected: open %s: %s", device, strerror(errno));
		return why;
	}
	if (ioctl(fd, CDROM_GET_CAPABILITY, 0) < 0)
		text_fmt(why, sizeof(why), "not a CD drive, nothing to eject");
	else if ((r = ioctl(fd, CDROMEJECT, 0)) < 0)
		text_fmt(why, sizeof(why), "eject %s failed: %s", device, strerror(errno));
	else if (r > 0) /* the drive's own answer (a SCSI status), not an errno: errno is stale then */
		text_fmt(why, sizeof(why), "eject %s: the drive refused (status %d); the tray stays closed", device, r);
	else
		text_fmt(why, sizeof(why), "ejected");
	if (close(fd) != 0)
		msg("close %s: %s", device, strerror(errno));
	return why;
}

/* The medium's read-ahead: a CD's 128 KiB window makes the drive idle while the CPU copies, and caps
 * what WILLNEED asks for. A few chunks of it let the reads run ahead of the copy. Returns the old
 * value (sectors) to put back, or -1 when it could not be changed (the copy is only slower). */
#define TORAM_RA_SECTORS (3 * CHUNK / 512)
static long readahead_set(const char *device, long sectors)
{
	long old = -1;
	int fd = open(device, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		dbg("open %s for its read-ahead: %s", device, strerror(errno));
		return -1;
	}
	if (ioctl(fd, BLKRAGET, &old) != 0 || ioctl(fd, BLKRASET, (unsigned long)sectors) != 0) {
		dbg("read-ahead of %s not changed: %s", device, strerror(errno));
		old = -1;
	}
	if (close(fd) != 0)
		msg("close %s: %s", device, strerror(errno));
	return old;
}

struct copy {
	const char *src;
	char dst[PATH_LEN];
	int loop;
	unsigned long long bytes;
	bool direct;
};

/* Each layer, and its hash tree when it is verified, into c (both loop devices move to the copies): how many, their
 * bytes in *total; -1 with fail() set. */
static int copy_list(const struct boot *b, const char *dir, struct copy *c, unsigned long long *total)
{
	int i, k, n = 0;

	for (i = 0; i < b->nlayers; i++) {
		const struct layer *l = &b->layer[i];

		if (l->loop < 0)
			return fail(EINVAL, "toram: layer %s has no loop device", l->name);
		for (k = 0; k < 1 + (l->hash_loop >= 0); k++) {
			struct stat st;

			c[n].src = k ? l->hash_file : l->file;
			c[n].loop = k ? l->hash_loop : l->loop;
			if (path_fmt(c[n].dst, sizeof(c[n].dst), "%s/%s.%s", dir, l->name, k ? "verity" : "squashfs") !=
			    0)
				return -1;
			if (stat(c[n].src, &st) != 0)
				return fail(errno, "stat %s", c[n].src);
			c[n].bytes = (unsigned long long)st.st_size;
			*total += c[n].bytes;
			n++;
		}
	}
	return n;
}

/* The layers read from RAM now: the medium unmounted (an ISO file's partition too) and a CD ejected; the result. */
static void release_medium(const struct plan *p, struct boot *b, const char *medium_dir, unsigned long long total,
			   double copy_s)
{
	char medium[PATH_LEN + 16];
	const char *ejected;

	if (umount(medium_dir) != 0) {
		msg("live.toram: layers are in RAM, but umount %s failed: %s; do not remove the medium", medium_dir,
		    strerror(errno));
		text_fmt(b->toram_result, sizeof(b->toram_result), "copied; medium still mounted");
		return;
	}
	if (b->iso_host[0]) { /* the loop device went with the ISO's mount (autoclear); now its partition */
		if (path_fmt(medium, sizeof(medium), "%s/iso-host", p->run_live) == 0 && umount(medium) == 0) {
			ejected = "the ISO file's partition is unmounted";
		} else {
			msg("live.toram: layers are in RAM, but %s (holding %s) stays mounted: %s", b->iso_host,
			    p->iso_path, strerror(errno));
			ejected = "the ISO file's partition is still mounted: do not remove it";
			fail_clear();
		}
	} else {
		ejected = eject(b->device);
	}
	msg("live.toram: layers are in RAM; the medium %s is released and can be removed (%s)",
	    b->iso_host[0] ? b->iso_host : b->device, ejected);
	text_fmt(b->toram_result, sizeof(b->toram_result), "copied %llu bytes in %.2f s; medium released; %s", total,
		 copy_s, ejected);
}

int toram_copy(const struct plan *p, struct boot *b)
{
	static struct copy c[MAX_LAYERS * 2];
	char dir[PATH_LEN + 16], medium[PATH_LEN + 16], note[160], opts[64], hopts[96];
	struct progress pr;
	unsigned long long total = 0, checked = 0;
	double copy_s, t0;
	long ra;
	int i, n = 0, ndirect = 0, rc = 0;

	if (!p->toram) {
		if (p->net != NET_FETCH)
			text_fmt(b->toram_result, sizeof(b->toram_result), "not asked");
		return 0;
	}
	if (!plan_toram_fits(p, b, note, sizeof(note))) {
		msg("live.toram: %s; booting from the medium instead", note);
		text_fmt(b->toram_result, sizeof(b->toram_result), "skipped: %s", note);
		return 0;
	}
	if (path_fmt(dir, sizeof(dir), "%s/toram", p->run_live) != 0 ||
	    path_fmt(medium, sizeof(medium), "%s/" LIVE_MEDIUM, p->run_live) != 0)
		return -1;
	if ((n = copy_list(b, dir, c, &total)) < 0)
		return -1;
	if (mkdir_p(dir, 0755) != 0)
		return -1;
	/* Room for the copies and tmpfs' rounding per file, no more: the rest of RAM stays for the system. */
	if (path_fmt(opts, sizeof(opts), "size=%llu,mode=0755", total + (unsigned long long)(n + 1) * (1 << 20)) != 0)
		return -1;
	/* huge pages: one allocation per 2 MiB of copy (kernels without THP refuse the option) */
	if (path_fmt(hopts, sizeof(hopts), "%s,huge=within_size", opts) != 0)
		return -1;
	if (mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, hopts) != 0) {
		dbg("mount tmpfs %s with %s: %s; without huge pages", dir, hopts, strerror(errno));
		if (do_mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) != 0)
			return -1;
	}
	msg("live.toram: copying %d layer(s), %llu bytes (%llu MiB), to %s (%s)", b->nlayers, total, total >> 20, dir,
	    note);
	ra = readahead_set(b->device, TORAM_RA_SECTORS);
	progress_start(&pr, "live.toram", total);
	for (i = 0; i < n && rc == 0; i++)
		rc = ramcopy_file(c[i].src, c[i].dst, c[i].bytes, b->device, &pr, &c[i].direct);
	copy_s = progress_end(&pr);
	if (ra >= 0 && readahead_set(b->device, ra) < 0)
		msg("live.toram: could not put back the read-ahead of %s (%ld sectors)", b->device, ra);
	if (rc != 0)
		return -1;
	msg("live.toram: copied %llu bytes in %.2f s (%.1f MB/s)", total, copy_s,
	    copy_s > 0 ? (double)total / copy_s / 1e6 : 0.0);
	t0 = progress_now();
	for (i = 0; i < n; i++) {
		if (ramcopy_verify(c[i].src, c[i].dst, c[i].bytes, c[i].direct, &checked) != 0)
			return -1;
		ndirect += c[i].direct;
	}
	msg("live.toram: the RAM copy matches what was read (%d file(s), %d of them read from %s directly and compared "
	    "at the start, the end and every %llu MiB; %.1f MiB compared in %.2f s)",
	    n, ndirect, b->device, SAMPLE_STRIDE >> 20, (double)checked / (1 << 20), progress_now() - t0);
	for (i = 0; i < n; i++)
		if (loop_change(c[i].loop, c[i].dst) != 0)
			return -1;
	for (i = 0; i < b->nlayers; i++)
		if (path_fmt(b->layer[i].file, sizeof(b->layer[i].file), "%s/%s" LAYER_SUFFIX, dir, b->layer[i].name) !=
		    0)
			return -1;
	release_medium(p, b, medium, total, copy_s);
	return 0;
}

#include "toram.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kapi.h"
#include "log.h"
#include "progress.h"
#include "util.h"

/* Big reads keep the medium streaming; the buffer is the only copy in user space. */
#define CHUNK (4u << 20)

/* A word-wise FNV-1a: enough to see a copy that differs from what was read (a short write, a
 * full tmpfs, a bad RAM page); tampering is dm-verity's job. Lengths are multiples of 8 but the last. */
static uint64_t sum_add(uint64_t h, const unsigned char *b, size_t n)
{
	size_t i;
	uint64_t w;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static unsigned char *buffer(void)
{
	static unsigned char buf[CHUNK];

	return buf;
}

/* Copy src to dst, counting into pr; the checksum of what was read goes to sum. */
static int copy_file(const char *src, const char *dst, struct progress *pr, uint64_t *sum)
{
	unsigned char *buf = buffer();
	uint64_t h = 0xcbf29ce484222325ULL;
	int in, out, rc = 0;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fail(errno, "open %s", src);
	if (posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL) != 0)
		dbg("posix_fadvise %s: sequential read-ahead not set", src);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (out < 0) {
		rc = fail(errno, "create %s", dst);
		goto close_in;
	}
	for (;;) {
		ssize_t n = read(in, buf, CHUNK), w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fail(errno, "read %s", src);
			break;
		}
		if (n == 0)
			break;
		while (w < n) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				rc = fail(k < 0 ? errno : ENOSPC, "write %s", dst);
				goto close_out;
			}
			w += k;
		}
		h = sum_add(h, buf, (size_t)n);
		progress_add(pr, (unsigned long long)n);
	}
	*sum = h;
close_out:
	if (close(out) != 0 && rc == 0)
		rc = fail(errno, "close %s", dst);
close_in:
	if (close(in) != 0 && rc == 0)
		rc = fail(errno, "close %s", src);
	return rc;
}

/* Read the RAM copy back: same size and checksum as what came from the medium. */
static int verify_copy(const char *dst, unsigned long long bytes, uint64_t sum)
{
	unsigned char *buf = buffer();
	uint64_t h = 0xcbf29ce484222325ULL;
	unsigned long long got = 0;
	int fd = open(dst, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return fail(errno, "open %s to verify it", dst);
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fail(errno, "read %s to verify it", dst);
			break;
		}
		if (n == 0)
			break;
		h = sum_add(h, buf, (size_t)n);
		got += (unsigned long long)n;
	}
	if (close(fd) != 0 && rc == 0)
		rc = fail(errno, "close %s", dst);
	if (rc == 0 && (got != bytes || h != sum))
		rc = fail(EIO, "live.toram: the RAM copy %s differs from what was read from the medium (%llu of %llu bytes)",
			  dst, got, bytes);
	return rc;
}

/* Point a read-only loop device at a file of the same size without unmounting what sits on it. */
static int loop_change(int nr, const char *file)
{
	char dev[32];
	int lfd, ffd, rc = 0;

	text_fmt(dev, sizeof(dev), "/dev/loop%d", nr);
	ffd = open(file, O_RDONLY | O_CLOEXEC);
	if (ffd < 0)
		return fail(errno, "open %s", file);
	lfd = open(dev, O_RDONLY | O_CLOEXEC);
	if (lfd < 0)
		rc = fail(errno, "open %s", dev);
	else if (ioctl(lfd, LOOP_CHANGE_FD, ffd) != 0)
		rc = fail(errno, "switch %s to %s", dev, file);
	if (lfd >= 0 && close(lfd) != 0 && rc == 0)
		rc = fail(errno, "close %s", dev);
	if (close(ffd) != 0 && rc == 0)
		rc = fail(errno, "close %s", file);
	return rc;
}

/* A CD drive opens its tray; anything else (a USB stick) just may be pulled now. */
static const char *eject(const char *device)
{
	static char why[160];
	int fd = open(device, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		text_fmt(why, sizeof(why), "not ejected: open %s: %s", device, strerror(errno));
		return why;
	}
	if (ioctl(fd, LIVE_CDROM_GET_CAPABILITY, 0) < 0)
		text_fmt(why, sizeof(why), "not a CD drive, nothing to eject");
	else if (ioctl(fd, LIVE_CDROMEJECT, 0) != 0)
		text_fmt(why, sizeof(why), "eject %s failed: %s", device, strerror(errno));
	else
		text_fmt(why, sizeof(why), "ejected");
	if (close(fd) != 0)
		msg("close %s: %s", device, strerror(errno));
	return why;
}

struct copy {
	const char *src;
	char dst[PATH_LEN];
	int loop;
	unsigned long long bytes;
	uint64_t sum;
};

int stack_toram(struct plan *p)
{
	static struct copy c[MAX_LAYERS * 2];
	char dir[PATH_LEN + 16], medium[PATH_LEN + 16], note[160], opts[64];
	const char *ejected;
	struct progress pr;
	unsigned long long total = 0;
	double copy_s, t0;
	int i, n = 0;

	if (!p->toram) {
		text_fmt(p->toram_result, sizeof(p->toram_result), "not asked");
		return 0;
	}
	if (!plan_toram_fits(p, note, sizeof(note))) {
		msg("live.toram: %s; booting from the medium instead", note);
		text_fmt(p->toram_result, sizeof(p->toram_result), "skipped: %s", note);
		return 0;
	}
	if (path_fmt(dir, sizeof(dir), "%s/toram", p->run_live) != 0 ||
	    path_fmt(medium, sizeof(medium), "%s/medium", p->run_live) != 0)
		return -1;
	/* Each layer, and its hash tree when it is verified: both loop devices move to the copies. */
	for (i = 0; i < p->nlayers; i++) {
		struct layer *l = &p->layer[i];
		int k;

		if (l->loop < 0)
			return fail(EINVAL, "toram: layer %s has no loop device", l->name);
		for (k = 0; k < 1 + (l->hash_loop >= 0); k++) {
			struct stat st;

			c[n].src = k ? l->hash_file : l->file;
			c[n].loop = k ? l->hash_loop : l->loop;
			if (path_fmt(c[n].dst, sizeof(c[n].dst), "%s/%s.%s", dir, l->name, k ? "verity" : "squashfs") != 0)
				return -1;
			if (stat(c[n].src, &st) != 0)
				return fail(errno, "stat %s", c[n].src);
			c[n].bytes = (unsigned long long)st.st_size;
			total += c[n].bytes;
			n++;
		}
	}
	if (mkdir_p(dir, 0755) != 0)
		return -1;
	/* Room for the copies and tmpfs' rounding per file, no more: the rest of RAM stays for the system. */
	if (path_fmt(opts, sizeof(opts), "size=%llu,mode=0755", total + (unsigned long long)(n + 1) * (1 << 20)) != 0)
		return -1;
	if (do_mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) != 0)
		return -1;
	msg("live.toram: copying %d layer(s), %llu bytes (%llu MiB), to %s (%s)", p->nlayers, total, total >> 20, dir,
	    note);
	progress_start(&pr, "live.toram", total);
	for (i = 0; i < n; i++)
		if (copy_file(c[i].src, c[i].dst, &pr, &c[i].sum) != 0)
			return -1;
	copy_s = progress_end(&pr);
	msg("live.toram: copied %llu bytes in %.2f s (%.1f MB/s)", total, copy_s,
	    copy_s > 0 ? (double)total / copy_s / 1e6 : 0.0);
	t0 = progress_now();
	for (i = 0; i < n; i++)
		if (verify_copy(c[i].dst, c[i].bytes, c[i].sum) != 0)
			return -1;
	msg("live.toram: the RAM copy matches what was read (%d file(s) read back in %.2f s)", n, progress_now() - t0);
	for (i = 0; i < n; i++)
		if (loop_change(c[i].loop, c[i].dst) != 0)
			return -1;
	for (i = 0; i < p->nlayers; i++)
		text_fmt(p->layer[i].file, sizeof(p->layer[i].file), "%s/%s.squashfs", dir, p->layer[i].name);
	if (umount(medium) != 0) {
		msg("live.toram: layers are in RAM, but umount %s failed: %s; do not remove the medium", medium,
		    strerror(errno));
		text_fmt(p->toram_result, sizeof(p->toram_result), "copied; medium still mounted");
		return 0;
	}
	ejected = eject(p->device);
	msg("live.toram: layers are in RAM; the medium %s is released and can be removed (%s)", p->device, ejected);
	text_fmt(p->toram_result, sizeof(p->toram_result), "copied %llu bytes in %.2f s; medium released; %s", total,
		 copy_s, ejected);
	return 0;
}

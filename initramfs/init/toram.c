#include "toram.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "kapi.h"
#include "log.h"
#include "util.h"

struct progress {
	unsigned long long done, total;
	double start, last;
};

static double now_s(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
		return 0;
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void show(struct progress *pr, int force)
{
	double t = now_s(), el = t - pr->start;

	if (!force && t - pr->last < 1.0)
		return;
	pr->last = t;
	msg("toram: %llu / %llu MiB (%llu%%), %.1f MB/s", pr->done >> 20, pr->total >> 20,
	    pr->total ? pr->done * 100 / pr->total : 100, el > 0 ? (double)pr->done / el / 1e6 : 0.0);
}

static int copy_file(const char *src, const char *dst, struct progress *pr)
{
	static char buf[1 << 20];
	int in, out, rc = 0;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fail(errno, "open %s", src);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (out < 0) {
		rc = fail(errno, "create %s", dst);
		goto close_in;
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf)), w = 0;

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
		pr->done += (unsigned long long)n;
		show(pr, 0);
	}
close_out:
	if (close(out) != 0 && rc == 0)
		rc = fail(errno, "close %s", dst);
close_in:
	if (close(in) != 0 && rc == 0)
		rc = fail(errno, "close %s", src);
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

int stack_toram(struct plan *p)
{
	char dir[PATH_LEN + 16], medium[PATH_LEN + 16], note[160], opts[64], dst[PATH_LEN];
	struct progress pr = {0, 0, 0, 0};
	int i;

	if (!p->toram) {
		text_fmt(p->toram_result, sizeof(p->toram_result), "not asked");
		return 0;
	}
	if (!plan_toram_fits(p, note, sizeof(note))) {
		msg("live.toram: %s; booting from the medium instead", note);
		text_fmt(p->toram_result, sizeof(p->toram_result), "skipped: %s", note);
		return 0;
	}
	for (i = 0; i < p->nlayers; i++)
		pr.total += p->layer[i].bytes;
	if (path_fmt(dir, sizeof(dir), "%s/toram", p->run_live) != 0 ||
	    path_fmt(medium, sizeof(medium), "%s/medium", p->run_live) != 0)
		return -1;
	if (mkdir_p(dir, 0755) != 0)
		return -1;
	/* Room for the copies and tmpfs' rounding per file, no more: the rest of RAM stays for the system. */
	if (path_fmt(opts, sizeof(opts), "size=%llu,mode=0755",
		     pr.total + (unsigned long long)(p->nlayers + 1) * (1 << 20)) != 0)
		return -1;
	if (do_mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) != 0)
		return -1;
	msg("live.toram: copying %d layer(s), %llu MiB, to %s (%s)", p->nlayers, pr.total >> 20, dir, note);
	pr.start = pr.last = now_s();
	for (i = 0; i < p->nlayers; i++) {
		if (snprintf(dst, sizeof(dst), "%s/%s.squashfs", dir, p->layer[i].name) >= (int)sizeof(dst))
			return fail(ENAMETOOLONG, "toram copy of %s", p->layer[i].name);
		if (copy_file(p->layer[i].file, dst, &pr) != 0)
			return -1;
	}
	show(&pr, 1);
	for (i = 0; i < p->nlayers; i++) {
		struct layer *l = &p->layer[i];

		if (snprintf(dst, sizeof(dst), "%s/%s.squashfs", dir, l->name) >= (int)sizeof(dst))
			return fail(ENAMETOOLONG, "toram copy of %s", l->name);
		if (l->loop < 0)
			return fail(EINVAL, "toram: layer %s has no loop device", l->name);
		if (loop_change(l->loop, dst) != 0)
			return -1;
		memcpy(l->file, dst, sizeof(l->file));
	}
	if (umount(medium) != 0) {
		msg("live.toram: layers are in RAM, but umount %s failed: %s; do not remove the medium", medium,
		    strerror(errno));
		text_fmt(p->toram_result, sizeof(p->toram_result), "copied; medium still mounted");
		return 0;
	}
	msg("live.toram: layers are in RAM; the medium %s is released and can be removed", p->device);
	text_fmt(p->toram_result, sizeof(p->toram_result), "copied %llu bytes; medium released", pr.total);
	return 0;
}

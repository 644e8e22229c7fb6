#include "toram.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kapi.h"
#include "log.h"
#include "progress.h"
#include "util.h"

/* Big requests keep the medium streaming and the progress line moving. */
#define CHUNK (4u << 20)

static int read_full(int fd, unsigned char *buf, size_t len, const char *path, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t n = read(fd, buf + *got, len - *got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(errno, "read %s", path);
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Copy src (bytes long) to dst, counting into pr. The RAM file is mapped and read() fills it: the
 * kernel copies the medium's pages straight into the tmpfs pages (huge ones where tmpfs allows), one
 * memory copy as in a plain read, instead of two through a buffer. WILLNEED asks for the next chunks
 * before the current one is read, so the drive works while the CPU copies. */
static int copy_file(const char *src, const char *dst, unsigned long long bytes, struct progress *pr)
{
	unsigned long long off = 0;
	unsigned char *map = NULL;
	int in, out, rc = 0;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fail(errno, "open %s", src);
	if (posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL) != 0)
		dbg("posix_fadvise %s: sequential read-ahead not set", src);
	out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (out < 0) {
		rc = fail(errno, "create %s", dst);
		goto close_in;
	}
	if (bytes > 0 && ftruncate(out, (off_t)bytes) != 0) {
		rc = fail(errno, "size %s to %llu bytes", dst, bytes);
		goto close_out;
	}
	if (bytes > 0) {
		map = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, out, 0);
		if (map == MAP_FAILED) {
			rc = fail(errno, "map %s (%llu bytes)", dst, bytes);
			goto close_out;
		}
	}
	while (off < bytes) {
		size_t want = bytes - off < CHUNK ? (size_t)(bytes - off) : CHUNK, n;

		/* a hint: when it is not taken, the copy is only slower */
		if (posix_fadvise(in, (off_t)(off + want), 2 * CHUNK, POSIX_FADV_WILLNEED) != 0)
			dbg("posix_fadvise WILLNEED %s: not taken", src);
		if (read_full(in, map + off, want, src, &n) != 0) {
			rc = -1;
			break;
		}
		if (n < want) {
			rc = fail(EIO, "read %s: it ended at byte %llu of %llu", src, off + n, bytes);
			break;
		}
		off += n;
		progress_add(pr, (unsigned long long)n);
	}
	if (map && munmap(map, (size_t)bytes) != 0 && rc == 0)
		rc = fail(errno, "unmap %s", dst);
close_out:
	if (close(out) != 0 && rc == 0)
		rc = fail(errno, "close %s", dst);
close_in:
	if (close(in) != 0 && rc == 0)
		rc = fail(errno, "close %s", src);
	return rc;
}

/* The RAM copy against the source, byte for byte: the source comes from the page cache the copy
 * just filled (or the medium again when RAM was short), so this checks what was written to RAM. */
static int verify_copy(const char *src, const char *dst, unsigned long long bytes)
{
	static unsigned char a[CHUNK], b[CHUNK];
	unsigned long long off = 0;
	int fs, fd, rc = 0;

	fs = open(src, O_RDONLY | O_CLOEXEC);
	if (fs < 0)
		return fail(errno, "open %s to verify the copy", src);
	fd = open(dst, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = fail(errno, "open %s to verify it", dst);
		goto close_src;
	}
	for (;;) {
		size_t na, nb;

		if (read_full(fs, a, CHUNK, src, &na) != 0 || read_full(fd, b, CHUNK, dst, &nb) != 0) {
			rc = -1;
			break;
		}
		if (na != nb || memcmp(a, b, na) != 0) {
			rc = fail(EIO, "live.toram: the RAM copy %s differs from %s near byte %llu", dst, src, off);
			break;
		}
		off += na;
		if (na < CHUNK)
			break;
	}
	if (rc == 0 && off != bytes)
		rc = fail(EIO, "live.toram: %s has %llu bytes, %s had %llu", dst, off, src, bytes);
	if (close(fd) != 0 && rc == 0)
		rc = fail(errno, "close %s", dst);
close_src:
	if (close(fs) != 0 && rc == 0)
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
	if (ioctl(fd, LIVE_BLKRAGET, &old) != 0 || ioctl(fd, LIVE_BLKRASET, (unsigned long)sectors) != 0) {
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
};

int stack_toram(struct plan *p)
{
	static struct copy c[MAX_LAYERS * 2];
	char dir[PATH_LEN + 16], medium[PATH_LEN + 16], note[160], opts[64], hopts[96];
	const char *ejected;
	struct progress pr;
	unsigned long long total = 0;
	double copy_s, t0;
	long ra;
	int i, n = 0, rc = 0;

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
	/* huge pages: one allocation per 2 MiB of copy (kernels without THP refuse the option) */
	if (path_fmt(hopts, sizeof(hopts), "%s,huge=within_size", opts) != 0)
		return -1;
	if (mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, hopts) != 0) {
		dbg("mount tmpfs %s with %s: %s; without huge pages", dir, hopts, strerror(errno));
		if (do_mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) != 0)
			return -1;
	}
	msg("live.toram: copying %d layer(s), %llu bytes (%llu MiB), to %s (%s)", p->nlayers, total, total >> 20, dir,
	    note);
	ra = readahead_set(p->device, TORAM_RA_SECTORS);
	progress_start(&pr, "live.toram", total);
	for (i = 0; i < n && rc == 0; i++)
		rc = copy_file(c[i].src, c[i].dst, c[i].bytes, &pr);
	copy_s = progress_end(&pr);
	if (ra >= 0 && readahead_set(p->device, ra) < 0)
		msg("live.toram: could not put back the read-ahead of %s (%ld sectors)", p->device, ra);
	if (rc != 0)
		return -1;
	msg("live.toram: copied %llu bytes in %.2f s (%.1f MB/s)", total, copy_s,
	    copy_s > 0 ? (double)total / copy_s / 1e6 : 0.0);
	t0 = progress_now();
	for (i = 0; i < n; i++)
		if (verify_copy(c[i].src, c[i].dst, c[i].bytes) != 0)
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

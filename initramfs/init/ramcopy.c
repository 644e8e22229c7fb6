/* One layer file copied into RAM for live.toram, from the medium device itself (O_DIRECT) where it lies in one piece,
 * and the copy read back against the source. */
#include "ramcopy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>

#include "log.h"
#include "util.h"

/* Smaller files (hash trees) are not worth a block map: they go through the file system. */
#define DIRECT_MIN (1u << 20)

/* Where src lies on the medium device, when each CHUNK of it is one run of blocks in file order: then the
 * copy reads the device with O_DIRECT at that place, and the drive's transfer fills the RAM copy without a
 * copy through the page cache (the file system, iso9660, has no O_DIRECT of its own). The kernel's block map
 * (FIBMAP) is asked at both ends of every chunk. Returns the device opened with O_DIRECT and *base (bytes),
 * or -1 with the reason in why (the copy then reads src through the file system). */
static int direct_source(int in, const char *device, unsigned long long bytes, unsigned long long *base, char *why,
			 size_t wlen)
{
	unsigned long long first;
	struct stat fs, ds;
	int bsz, lbs = 0, fd;

	if (bytes < DIRECT_MIN) {
		text_fmt(why, wlen, "smaller than %u bytes", DIRECT_MIN);
		return -1;
	}
	if (fstat(in, &fs) != 0) {
		text_fmt(why, wlen, "stat: %s", strerror(errno));
		return -1;
	}
	if (file_block_run(in, bytes, CHUNK, &bsz, &first, why, wlen) != 0)
		return -1;
	if (4096 % bsz != 0) {
		text_fmt(why, wlen, "its file system's block size %d is not a divisor of 4096", bsz);
		return -1;
	}
	fd = open(device, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		text_fmt(why, wlen, "open %s with O_DIRECT: %s", device, strerror(errno));
		return -1;
	}
	if (fstat(fd, &ds) != 0 || !S_ISBLK(ds.st_mode) || ds.st_rdev != fs.st_dev)
		text_fmt(why, wlen, "%s is not the device it is on", device);
	else if (ioctl(fd, BLKSSZGET, &lbs) != 0 || lbs <= 0 || 4096 % lbs != 0 ||
		 ((unsigned long long)first * (unsigned)bsz) % (unsigned)lbs != 0)
		text_fmt(why, wlen, "it does not start on a sector of %s", device);
	else {
		*base = first * (unsigned)bsz;
		return fd;
	}
	if (close(fd) != 0)
		dbg("close %s: %s", device, strerror(errno));
	return -1;
}

static int pread_full(int fd, unsigned char *buf, size_t len, unsigned long long at, const char *what, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, buf + *got, len - *got, (off_t)(at + *got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(errno, "read %s at byte %llu", what, at + *got);
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Copy src (bytes long) to dst, counting into pr; *direct tells whether the medium device was read.
 * The RAM file is mapped and the reads land in it. When direct_source finds where src lies on the
 * device, the whole 4 KiB-aligned part is read from the device with O_DIRECT: the drive's transfer goes
 * straight into the tmpfs pages (huge ones where tmpfs allows), no copy through the page cache. The rest
 * (the tail, or all of a file that is not laid out so) is read through the file system, with WILLNEED
 * asking for the next chunks before the current one is read so the drive works while the CPU copies. */
int ramcopy_file(const char *src, const char *dst, unsigned long long bytes, const char *device, struct progress *pr,
		 bool *direct)
{
	unsigned long long off = 0, base = 0, aligned = 0;
	unsigned char *map = NULL;
	char why[160];
	int in, out, dfd = -1, rc = 0;

	*direct = false;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fail(errno, "open %s", src);
	dfd = direct_source(in, device, bytes, &base, why, sizeof(why));
	if (dfd >= 0) {
		aligned = bytes & ~4095ULL;
		*direct = true;
		dbg("live.toram: %s lies at byte %llu of %s: read from there with O_DIRECT", src, base, device);
	} else {
		dbg("live.toram: %s is read through the file system: %s", src, why);
	}
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
		int r;

		if (off < aligned) {
			if (want > aligned - off)
				want = (size_t)(aligned - off);
			r = pread_full(dfd, map + off, want, base + off, device, &n);
		} else {
			/* a hint: when it is not taken, the copy is only slower */
			if (posix_fadvise(in, (off_t)(off + want), 2 * CHUNK, POSIX_FADV_WILLNEED) != 0)
				dbg("posix_fadvise WILLNEED %s: not taken", src);
			r = pread_full(in, map + off, want, off, src, &n);
		}
		if (r != 0) {
			rc = -1;
			break;
		}
		if (n < want) {
			rc = fail(EIO, "read %s: it ended at byte %llu of %llu", off < aligned ? device : src, off + n,
				  bytes);
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
	if (dfd >= 0 && close(dfd) != 0 && rc == 0)
		rc = fail(errno, "close %s", device);
	if (close(in) != 0 && rc == 0)
		rc = fail(errno, "close %s", src);
	return rc;
}

/* The RAM copy against the source read through the file system, in windows of WINDOW bytes: every
 * window when the copy came through the file system (the source is then in the page cache the copy just
 * filled, so this checks what was written to RAM at memory speed); when the device was read directly,
 * the first and last window and one every SAMPLE_STRIDE bytes: the file system's path to the same bytes
 * is independent of direct_source's block map, so a copy from a wrong place shows at once, for a few
 * seeks instead of a second full read of the medium (dm-verity still checks every block when read). */
#define WINDOW (1u << 20)
int ramcopy_verify(const char *src, const char *dst, unsigned long long bytes, bool sampled,
		   unsigned long long *checked)
{
	static unsigned char a[WINDOW], b[WINDOW];
	unsigned long long off = 0, stride = sampled ? SAMPLE_STRIDE : WINDOW;
	struct stat st;
	int fs, fd, rc = 0;

	fs = open(src, O_RDONLY | O_CLOEXEC);
	if (fs < 0)
		return fail(errno, "open %s to verify the copy", src);
	fd = open(dst, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = fail(errno, "open %s to verify it", dst);
		goto close_src;
	}
	if (fstat(fd, &st) != 0) {
		rc = fail(errno, "stat %s", dst);
		goto close_dst;
	}
	if ((unsigned long long)st.st_size != bytes) {
		rc = fail(EIO, "live.toram: %s has %llu bytes, %s had %llu", dst, (unsigned long long)st.st_size, src,
			  bytes);
		goto close_dst;
	}
	while (off < bytes) {
		size_t want = bytes - off < WINDOW ? (size_t)(bytes - off) : WINDOW, na, nb;

		if (pread_full(fs, a, want, off, src, &na) != 0 || pread_full(fd, b, want, off, dst, &nb) != 0) {
			rc = -1;
			break;
		}
		if (na != want || nb != want || memcmp(a, b, want) != 0) {
			rc = fail(EIO, "live.toram: the RAM copy %s differs from %s in bytes %llu to %llu", dst, src,
				  off, off + want);
			break;
		}
		*checked += want;
		if (off + want >= bytes)
			break;
		/* here want == WINDOW and a window follows; sampled, the last one ends where the file ends */
		if (sampled && off + stride + WINDOW > bytes)
			off = bytes - WINDOW;
		else
			off += stride;
	}
close_dst:
	if (close(fd) != 0 && rc == 0)
		rc = fail(errno, "close %s", dst);
close_src:
	if (close(fs) != 0 && rc == 0)
		rc = fail(errno, "close %s", src);
	return rc;
}

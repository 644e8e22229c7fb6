/* slot-write: write a new image into the clusters of an A/B stick's inactive slot file, only where they differ.
 * iso/slots.sh (./build.sh usb --update) reads where the slot's file lies from the stick's FAT (mshowfat) and hands
 * it over as extents on stdin, one "FILE-OFFSET DISK-OFFSET BYTES" line a run of clusters, in file order; this
 * compares SOURCE with TARGET (the stick image or device) a CHUNK at a time and writes back the chunks that
 * differ, then syncs TARGET. Nothing outside the extents is written, so the FAT, the directory, the active slot
 * and the store are never touched.
 *
 *   slot-write SOURCE TARGET < EXTENTS
 *
 * Prints the bytes written on stdout. Exit 0, or 1 with the reason on stderr (EXTENTS that do not hold all of
 * SOURCE, a short read, a failed write). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "full_io.h"

#define CHUNK (64 * 1024)

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "slot-write: %s: %s\n", what, why);
	return 1;
}

int main(int argc, char **argv)
{
	static char a[CHUNK], b[CHUNK];
	long long foff, doff, len, covered = 0, written = 0;
	struct stat st;
	int src, dst;

	if (argc != 3) {
		fprintf(stderr, "usage: slot-write SOURCE TARGET < EXTENTS\n");
		return 2;
	}
	if ((src = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0 || fstat(src, &st) != 0)
		return fail(argv[1], strerror(errno));
	if ((dst = open(argv[2], O_RDWR | O_CLOEXEC)) < 0)
		return fail(argv[2], strerror(errno));
	while (covered < st.st_size && scanf("%lld %lld %lld", &foff, &doff, &len) == 3) {
		if (foff != covered || doff < 0 || len <= 0)
			return fail("extents", "not a run of clusters following the previous one");
		if (len > st.st_size - foff)
			len = st.st_size - foff;
		for (long long i = 0; i < len; i += CHUNK) {
			size_t n = (size_t)(len - i < CHUNK ? len - i : CHUNK);
			if (full_pread(src, a, n, (off_t)(foff + i)) != 0)
				return fail(argv[1], errno ? strerror(errno) : "shorter than it was");
			if (full_pread(dst, b, n, (off_t)(doff + i)) != 0)
				return fail(argv[2], errno ? strerror(errno) : "ends inside the slot's clusters");
			if (!memcmp(a, b, n))
				continue;
			if (full_pwrite(dst, a, n, (off_t)(doff + i)) != 0)
				return fail(argv[2], strerror(errno));
			written += (long long)n;
		}
		covered += len;
	}
	if (covered < st.st_size)
		return fail("extents", "the slot's clusters hold less than the image");
	if (fsync(dst) != 0)
		return fail(argv[2], strerror(errno));
	if (close(dst) != 0)
		return fail(argv[2], strerror(errno));
	printf("%lld\n", written);
	return 0;
}

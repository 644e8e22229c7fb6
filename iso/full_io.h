/* Whole reads and writes at an offset, for the project's small host-side C tools (iso/luks-fill.c,
 * iso/slot-write.c, tests/powerloss/replay-log.c): pread and pwrite may do less than asked, and EINTR is retried. */
#ifndef LIVEUNION_FULL_IO_H
#define LIVEUNION_FULL_IO_H
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* full_pread: exactly len bytes at off, or -1 with errno (0 for an early end of file). */
static inline int full_pread(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n, len -= (size_t)n, off += (uint64_t)n;
	}
	return 0;
}

/* full_pwrite: all len bytes at off, or -1 with errno (EIO when nothing was written). */
static inline int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n, len -= (size_t)n, off += (uint64_t)n;
	}
	return 0;
}
#endif

#ifndef LIVE_RAMCOPY_H
#define LIVE_RAMCOPY_H
/* live.toram's file copy (ramcopy.c). */
#include <stdbool.h>

#include "progress.h"

/* Big requests keep the medium streaming and the progress line moving. */
#define CHUNK (4u << 20)
/* A copy read from the device directly is compared at its ends and every SAMPLE_STRIDE bytes. */
#define SAMPLE_STRIDE (64ull << 20)

/* Copy src (bytes long) to dst (a file on a tmpfs), counting into pr; *direct tells whether the medium device was
 * read (O_DIRECT, where src lies in one piece on it) rather than the file system. 0, or -1 with fail() set. */
int ramcopy_file(const char *src, const char *dst, unsigned long long bytes, const char *device, struct progress *pr,
		 bool *direct);
/* dst against src read through the file system: every window, or (sampled: the copy came from the device) the
 * first, the last and one every SAMPLE_STRIDE bytes; the bytes compared are added to *checked. 0, or -1 with
 * fail() set naming where they differ. */
int ramcopy_verify(const char *src, const char *dst, unsigned long long bytes, bool sampled,
		   unsigned long long *checked);
#endif

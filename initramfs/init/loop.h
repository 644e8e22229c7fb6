#ifndef LIVE_LOOP_H
#define LIVE_LOOP_H
#include <stdbool.h>

/* Attach file (from byte offset, size bytes; 0 = to its end) to a free loop device, read-only when ro.
 * Autoclear: the device goes when its last user (a mount, dm-verity) lets go of it. Returns an open fd of
 * the loop device (close it once something holds the device) and its number in *nr, or -1 with fail() set. */
int loop_attach(const char *file, bool ro, unsigned long long offset, unsigned long long size, int *nr);
/* Point read-only loop device nr at file (of the same size) without unmounting what sits on it. */
int loop_change(int nr, const char *file);
#endif

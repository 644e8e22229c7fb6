#ifndef LIVE_UTIL_H
#define LIVE_UTIL_H
#include <sys/types.h>

/* mkdir -p; 0 or -1 with fail() set. */
int mkdir_p(const char *path, mode_t mode);
/* mount(2) that records "mount TYPE SRC on DIR" on failure. */
int do_mount(const char *src, const char *dir, const char *type, unsigned long flags, const char *data);
/* Read a small text file; -1 on error. */
int read_text(const char *path, char *buf, size_t len);
/* MemTotal and MemAvailable in bytes from a meminfo file. */
int read_meminfo(const char *path, unsigned long long *total, unsigned long long *avail);
#endif

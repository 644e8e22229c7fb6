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
/* snprintf for paths and mount options: truncation is an error (fail() set, -1), never a
 * shorter path that names something else. */
int path_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* snprintf for message text: a truncated message is still useful, so it only terminates. */
void text_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif

#ifndef LIVE_UTIL_H
#define LIVE_UTIL_H
#include <sys/types.h>

#include "text.h"

/* mkdir -p; 0 or -1 with fail() set. */
int mkdir_p(const char *path, mode_t mode);
/* mount(2) that records "mount TYPE SRC on DIR" on failure. */
int do_mount(const char *src, const char *dir, const char *type, unsigned long flags, const char *data);
/* Write all len bytes of buf to fd (again after EINTR and short writes): 0, or -1 with errno (ENOSPC when the
 * file took nothing). Nothing is logged: the caller knows what the bytes were for. */
int write_full(int fd, const void *buf, size_t len);
/* Run argv[0] (a full path) with argv and wait: its exit status, 128 + the signal that ended it, or -1 (errno)
 * when it could not be started or waited for. Nothing is logged. */
int run_wait(const char *const argv[]);
/* Sleep ms milliseconds, whatever signals come. */
void sleep_ms(long ms);
/* Create or truncate path for writing (0644): the fd, or -1 with fail() set. */
int open_write(const char *path);
/* Read a small text file; -1 on error. */
int read_text(const char *path, char *buf, size_t len);
/* MemTotal and MemAvailable in bytes from a meminfo file. */
int read_meminfo(const char *path, unsigned long long *total, unsigned long long *avail);
/* snprintf for paths and mount options: truncation is an error (fail() set, -1), never a
 * shorter path that names something else. */
int path_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define DIR_NAME_LEN 128
/* The names in dir, dot files and longer names passed over, sorted, into names with list[i] pointing at
 * names[i]; at most max (more is said, the rest left out). How many, or -1 with fail() set. */
int dir_names(const char *dir, char names[][DIR_NAME_LEN], const char *list[], int max);
/* Whether the file open on fd (bytes long) lies on its device as one run of blocks in file order: the
 * kernel's block map (FIBMAP) is asked at the first and last block of every step bytes (where its file
 * system may jump: a FAT cluster, a copy chunk; 0 or a step that is not whole blocks: every block).
 * 0 with *bsz (the file system's block size) and *first (the block the file starts at), or -1 with
 * the reason in why. */
int file_block_run(int fd, unsigned long long bytes, unsigned long long step, int *bsz, unsigned long long *first,
		   char *why, size_t wlen);
/* A file's block map: the device block of file block blk in *phys (0: none, a hole), 0; or -1 (errno) when it
 * cannot be asked. */
typedef int (*block_map_fn)(void *ctx, unsigned long long blk, unsigned long long *phys);
/* file_block_run's walk over a block map, for bsz-byte blocks (0 is refused). */
int block_run(unsigned long long bytes, unsigned long long step, unsigned bsz, block_map_fn map, void *ctx,
	      unsigned long long *first, char *why, size_t wlen);
#endif

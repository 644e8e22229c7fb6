/* store.h - `liveunion store`: what the subcommands know about the persistence store they work on. */
#ifndef LIVEUNION_STORE_H
#define LIVEUNION_STORE_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_NAME_LEN 64

/* The store as the kernel shows it: the ext4 mounted on dir, and what lies under it. Filled by store_find from
 * /proc/self/mountinfo and /sys; nothing is guessed from the plan's text. */
struct store_info {
	char dir[PATH_MAX];       /* where the store's ext4 is mounted (the directory holding STORE_VDIR) */
	char dev[STORE_NAME_LEN]; /* the ext4's block device, e.g. sda3, loop0, dm-0 (a name under /sys/class/block) */
	char mapper[STORE_NAME_LEN]; /* LUKS: the dm name (liveunion-rw); else "" */
	char under[STORE_NAME_LEN];  /* the device holding the store's bytes: the LUKS container's device, else dev */
	char part[STORE_NAME_LEN]; /* the partition those bytes are on (sda3; for a loop, its backing partition), or "" */
	char disk[STORE_NAME_LEN]; /* the disk of part, or "" */
	char backing[PATH_MAX];    /* loop: its backing file (a path, or /dev/sda3 when used in place), else "" */
	char fat[8];               /* a file store: "vfat" or "exfat" (the file system holding it), else "" */
	unsigned long long offset; /* loop: the backing offset in bytes */
	int luks, loop, ro;
};

/* dir (the store's mount point) -> st. 0, or -1 with the reason said on stderr (prefixed by what). */
int store_find(const char *what, const char *dir, struct store_info *st);
/* "ext4 partition /dev/sda3", "LUKS2 on ...", "file liveunion-rw.img on vfat ..." */
void store_format_text(const struct store_info *st, char *buf, size_t len);
/* The size in bytes of the block device NAME (under /sys/class/block), or 0. */
unsigned long long blk_bytes(const char *name);
/* Whether the block device NAME is in use: mounted, held (dm, md), backing a loop device, or a disk with such a
 * partition. 1 with *why filled, else 0. */
int blk_busy(const char *name, char *why, size_t len);
/* The name under /sys/class/block of the block device file PATH, or -1 (errno set). */
int blk_name_of(const char *path, char *name, size_t len);
/* snprintf that says by its result whether all of it fitted: 0, or -1 (errno ENAMETOOLONG) when cut short. The
 * paths built here start from PATH_MAX-bounded ones; a cut one then names nothing and fails where it is used. */
int pfmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A sysfs attribute as text without its newline; 0 or -1. */
int sys_read(const char *path, char *buf, size_t len);
/* A little-endian 32-bit number (MBR entries, the ext4 superblock). */
uint32_t le32(const unsigned char *p);
/* The number in /sys/class/block/NAME/ATTR, or 0. */
unsigned long long sys_num(const char *name, const char *attr);
/* The first entry of /sys/class/block/NAME/SUB (slaves, holders), or "" */
void sys_first(const char *name, const char *sub, char *out, size_t len);
/* The disk of partition NAME ("" when NAME is not a partition). */
void disk_of(const char *name, char *disk, size_t len);
/* Calls fn(majmin, mountpoint, fstype, opts, arg) for each line of /proc/self/mountinfo; stops at a nonzero return. */
int mounts_each(int (*fn)(const char *, const char *, const char *, const char *, void *), void *arg);
/* Runs ARGV (argv[0] looked up in /sbin, /usr/sbin, /bin, /usr/bin), stdin from in_fd when >= 0; its exit status,
 * or -1 when it could not be started (said). */
int store_run(const char *const *argv, int in_fd);

/* cmd_store.c: the options of a subcommand (--store DIR and opts: "--flag" or "--name=" taking a value, landing in
 * vals[]); positional arguments in pos[npos]. 0; 2 after saying what was wrong; 3 for --help. */
int store_args(const char *sub, int argc, char **argv, const char *const *opts, const char **vals, const char **dir,
	       const char **pos, int npos);
/* "12.3 MiB" */
void human(unsigned long long bytes, char *buf, size_t len);

int store_status(int argc, char **argv);
int store_reset(int argc, char **argv);
int store_passphrase(int argc, char **argv);
int store_backup(int argc, char **argv);
int store_restore(int argc, char **argv);
int store_grow(int argc, char **argv);
/* store_copy.c, for backup and restore: size bytes from in to out; into a regular file (sparse), blocks of zeros
 * are left as holes. The bytes written in *written. 0, or -1 with the failing side named. */
int copy_bytes(const char *what, int in, const char *from, int out, const char *to, unsigned long long size, int sparse,
	       unsigned long long *written);
/* The destination device NAME may be written: not in use, not the store st's own (st may be NULL), large enough
 * for need bytes. 0, or -1 said. */
int device_ok(const char *what, const char *path, const char *name, const struct store_info *st,
	      unsigned long long need);
/* store_grow_part.c: the partition st->part grown to the end of its disk: 0 grown, 1 nothing to grow (said), -1
 * refused (said). */
int grow_partition(const struct store_info *st);
#endif

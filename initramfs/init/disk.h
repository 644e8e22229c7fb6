#ifndef LIVE_DISK_H
#define LIVE_DISK_H
/* Block devices as sysfs lists them, and what their first sectors say (MBR, GPT). Each function takes the
 * sysfs block directory (SYSBLOCK on a boot) and the device node directory, so a host test can fake both. */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SYSBLOCK "/sys/class/block"
#define DISK_NAME_LEN 64

/* Little-endian fields of on-disk structures (MBR, GPT, ext4 and FAT superblocks, dm-verity's). */
unsigned le16(const unsigned char *b);
unsigned long le32(const unsigned char *b);
unsigned long long le64(const unsigned char *b);

/* How many bytes from a device's start disk_fs_type looks at. */
#define FS_SNIFF_LEN 2048
/* The kernel filesystem type that a device's first len bytes show, for a filesystem that can hold files a user put
 * there ("ext4" for ext2/3/4, "vfat", "exfat", "ntfs3"), or NULL. */
const char *disk_fs_type(const unsigned char *b, size_t len);

/* Whether sysblock/name is a partition (it has a "partition" attribute). */
bool disk_is_partition(const char *sysblock, const char *name);
/* The whole disk a block device (a name or a /dev path) belongs to: sda for sda1 and for sda. */
int disk_of(const char *sysblock, const char *dev, char *disk, size_t len);
/* The names in sysblock, sorted by name: every block device (disk NULL) or the partitions of disk, those
 * that skip (may be NULL) passes over left out. At most max (more is said once on the console); -1 with fail()
 * set when sysblock cannot be read. */
int disk_list(const char *sysblock, const char *disk, bool (*skip)(const char *sysblock, const char *name),
	      char names[][DISK_NAME_LEN], int max);
/* Up to len bytes at byte off of the file or device path (opened, read, closed): how many, or -1 with errno (a
 * failed close fails it too). Nothing is logged: callers say what they were looking for. */
ssize_t disk_read_at(const char *path, void *buf, size_t len, off_t off);
/* The 512-byte MBR of the open device fd: 0 when it has the 55 AA signature, else -1. */
int disk_read_mbr(int fd, unsigned char mbr[512]);
/* Whether an MBR's table has an entry in use. */
bool mbr_has_entries(const unsigned char *mbr);
/* The byte offset of GPT entry partn (from 1) on a disk of lbs-byte blocks, from the GPT header gpt (512 bytes):
 * 0 with *at, or -1 when the table has no such entry, its entries are under 128 bytes or the offset does not fit
 * in an off_t. */
int gpt_entry_offset(const unsigned char *gpt, unsigned long lbs, unsigned long partn, unsigned long long *at);
/* The PARTUUID of partition partn from its disk's MBR (its 55 AA checked) and the 512 bytes at byte lbs (gpt, NULL
 * when they could not be read): the GPT entry's unique GUID (read_entry reads the 128 bytes at a byte offset; 0 or
 * -1) when the MBR protects a GPT, else the MBR signature-NN. 0 with the text in out, or -1. */
int part_uuid_from(const unsigned char mbr[512], const unsigned char *gpt, unsigned long lbs, unsigned long partn,
		   int (*read_entry)(void *ctx, unsigned long long at, unsigned char e[128]), void *ctx, char *out,
		   size_t len);
/* The PARTUUID of partition name the way the kernel numbers it (part_uuid_from on its disk). 0, or -1. */
int disk_part_uuid(const char *sysblock, const char *devdir, const char *name, char *out, size_t len);
#endif

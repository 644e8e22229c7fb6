#ifndef LIVE_DISK_H
#define LIVE_DISK_H
/* Block devices as sysfs lists them, and what their first sectors say (MBR, GPT). Each function takes the
 * sysfs block directory (SYSBLOCK on a boot) and the device node directory, so a host test can fake both. */
#include <stdbool.h>
#include <stddef.h>

#define SYSBLOCK "/sys/class/block"
#define DISK_NAME_LEN 64

/* Little-endian fields of on-disk structures (MBR, GPT, ext4 and FAT superblocks, dm-verity's). */
unsigned le16(const unsigned char *b);
unsigned long le32(const unsigned char *b);
unsigned long long le64(const unsigned char *b);

/* Whether sysblock/name is a partition (it has a "partition" attribute). */
bool disk_is_partition(const char *sysblock, const char *name);
/* The whole disk a block device (a name or a /dev path) belongs to: sda for sda1 and for sda. */
int disk_of(const char *sysblock, const char *dev, char *disk, size_t len);
/* The names in sysblock, sorted by name: every block device (disk NULL) or the partitions of disk, those
 * that skip (may be NULL) passes over left out. At most max; -1 with fail() set when sysblock cannot be read. */
int disk_list(const char *sysblock, const char *disk, bool (*skip)(const char *sysblock, const char *name),
	      char names[][DISK_NAME_LEN], int max);
/* The 512-byte MBR of the open device fd: 0 when it has the 55 AA signature, else -1. */
int disk_read_mbr(int fd, unsigned char mbr[512]);
/* Whether an MBR's table has an entry in use. */
bool mbr_has_entries(const unsigned char *mbr);
/* The PARTUUID of partition name the way the kernel numbers it: the GPT entry's unique GUID when the disk has
 * a GPT that the MBR protects (0xEE, also in hybrid ISO images), else the MBR signature-NN. 0, or -1. */
int disk_part_uuid(const char *sysblock, const char *devdir, const char *name, char *out, size_t len);
#endif

/* Kernel ABI the init needs that musl's headers lack (musl-gcc sees no linux/ uapi headers).
 * These values are fixed ABI of Linux; the numbers of the syscalls added since 5.1 are the
 * same on every architecture. */
#ifndef LIVE_KAPI_H
#define LIVE_KAPI_H
#include <stdint.h>
#include <sys/ioctl.h>

#define LOOP_SET_FD 0x4C00
#define LOOP_CLR_FD 0x4C01
#define LOOP_SET_STATUS64 0x4C04
#define LOOP_CHANGE_FD 0x4C06
#define LOOP_SET_DIRECT_IO 0x4C08
#define LOOP_CONFIGURE 0x4C0A
#define LOOP_CTL_GET_FREE 0x4C82
#define LIVE_LO_FLAGS_READ_ONLY 1u
#define LIVE_LO_FLAGS_AUTOCLEAR 4u
/* linux/fs.h: a file's block map (util.c's file_block_run: where store.c finds an image file on its FAT, and
 * toram.c a layer on the medium) */
#define LIVE_FIBMAP 1
#define LIVE_FIGETBSZ 2

struct live_loop_info64 {
	uint64_t lo_device, lo_inode, lo_rdevice, lo_offset, lo_sizelimit;
	uint32_t lo_number, lo_encrypt_type, lo_encrypt_key_size, lo_flags;
	uint8_t lo_file_name[64], lo_crypt_name[64], lo_encrypt_key[32];
	uint64_t lo_init[2];
};

struct live_loop_config {
	uint32_t fd, block_size;
	struct live_loop_info64 info;
	uint64_t reserved[8];
};

#define LIVE_NR_move_mount 429
#define LIVE_NR_fsopen 430
#define LIVE_NR_fsconfig 431
#define LIVE_NR_fsmount 432
#define LIVE_NR_openat2 437

#define LIVE_FSOPEN_CLOEXEC 1u
#define LIVE_FSMOUNT_CLOEXEC 1u
#define LIVE_FSCONFIG_SET_STRING 1u
#define LIVE_FSCONFIG_CMD_CREATE 6u
#define LIVE_MOVE_MOUNT_F_EMPTY_PATH 4u

struct live_open_how {
	uint64_t flags, mode, resolve;
};
#define LIVE_RESOLVE_IN_ROOT 0x10u

/* device-mapper (linux/dm-ioctl.h, interface version 4) */
#define LIVE_DM_NAME_LEN 128
#define LIVE_DM_UUID_LEN 129
struct live_dm_ioctl {
	uint32_t version[3];
	uint32_t data_size, data_start, target_count;
	int32_t open_count;
	uint32_t flags, event_nr, padding;
	uint64_t dev;
	char name[LIVE_DM_NAME_LEN];
	char uuid[LIVE_DM_UUID_LEN];
	char data[7];
};
struct live_dm_target_spec {
	uint64_t sector_start, length;
	int32_t status;
	uint32_t next;
	char target_type[16];
};
#define LIVE_DM_IOCTL_NR(cmd) _IOWR(0xfd, cmd, struct live_dm_ioctl)
#define LIVE_DM_DEV_CREATE LIVE_DM_IOCTL_NR(3)
#define LIVE_DM_DEV_REMOVE LIVE_DM_IOCTL_NR(4)
#define LIVE_DM_DEV_SUSPEND LIVE_DM_IOCTL_NR(6)
#define LIVE_DM_TABLE_LOAD LIVE_DM_IOCTL_NR(9)
#define LIVE_DM_READONLY_FLAG 1u

/* whether a block device is read-only (a write-protected stick): an int, 1 when it is */
#define LIVE_BLKROSET _IO(0x12, 93)
#define LIVE_BLKROGET _IO(0x12, 94)
/* block device read-ahead, in 512-byte sectors */
#define LIVE_BLKRASET _IO(0x12, 98)
#define LIVE_BLKRAGET _IO(0x12, 99)
#define LIVE_BLKSSZGET _IO(0x12, 104)

/* cdrom */
#define LIVE_CDROMEJECT 0x5309
#define LIVE_CDROM_GET_CAPABILITY 0x5331

/* linux/netlink.h: the kernel's uevents (modload.c) */
#define LIVE_NETLINK_KOBJECT_UEVENT 15
struct live_sockaddr_nl {
	unsigned short nl_family, nl_pad;
	uint32_t nl_pid, nl_groups;
};
/* linux/module.h: finit_module flag, since 6.4 */
#define LIVE_MODULE_INIT_COMPRESSED_FILE 4

#define LIVE_RAMFS_MAGIC 0x858458f6u
#define LIVE_TMPFS_MAGIC 0x01021994u

/* linux/nbd.h: the network block device's ioctls */
#define LIVE_NBD_SET_SOCK _IO(0xab, 0)
#define LIVE_NBD_SET_BLKSIZE _IO(0xab, 1)
#define LIVE_NBD_DO_IT _IO(0xab, 3)
#define LIVE_NBD_CLEAR_SOCK _IO(0xab, 4)
#define LIVE_NBD_CLEAR_QUE _IO(0xab, 5)
#define LIVE_NBD_SET_SIZE_BLOCKS _IO(0xab, 7)
#define LIVE_NBD_SET_TIMEOUT _IO(0xab, 9)
#define LIVE_NBD_SET_FLAGS _IO(0xab, 10)
#endif

/* Kernel ABI the init needs that musl's headers lack (musl-gcc sees no linux/ uapi headers).
 * These values are fixed ABI of Linux; the numbers of the syscalls added since 5.1 are the
 * same on every architecture. */
#ifndef LIVE_KAPI_H
#define LIVE_KAPI_H
#include <stdint.h>

#define LOOP_SET_FD 0x4C00
#define LOOP_CLR_FD 0x4C01
#define LOOP_SET_STATUS64 0x4C04
#define LOOP_CHANGE_FD 0x4C06
#define LOOP_CONFIGURE 0x4C0A
#define LOOP_CTL_GET_FREE 0x4C82
#define LIVE_LO_FLAGS_READ_ONLY 1u
#define LIVE_LO_FLAGS_AUTOCLEAR 4u

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

#define LIVE_RAMFS_MAGIC 0x858458f6u
#define LIVE_TMPFS_MAGIC 0x01021994u

#endif

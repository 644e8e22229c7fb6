/* Unit tests: partition tables and the sysfs block listing (disk.c) against a fake sysfs and a disk image
 * made here: the disk of a partition, the listing, the MBR and GPT PARTUUIDs the way the kernel numbers them, and
 * the pure reader of those sectors (part_uuid_from, gpt_entry_offset) on headers that point out of range. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk.h"
#include "init-test.h"
#include "log.h"

static char top[64], sys[128], devdir[128];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", path);
}

static void dir(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
}

static void link_to(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	CHECK(symlink(target, path) == 0, "symlink %s", path);
}

static void write_disk(const unsigned char *img, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/vda", devdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, img, len) == (ssize_t)len && close(fd) == 0, "write the disk image");
}

/* part_uuid_from's reader over an image in memory (ctx: its 4 sectors) */
static int read_mem(void *ctx, unsigned long long at, unsigned char e[128])
{
	if (at > 4 * 512 - 128)
		return -1;
	memcpy(e, (const unsigned char *)ctx + at, 128);
	return 0;
}

static int read_none(void *ctx, unsigned long long at, unsigned char e[128])
{
	(void)ctx;
	(void)at;
	(void)e;
	return -1;
}

/* The pure readers on the GPT of img (entries at LBA 2, 4 of 128 bytes): the entry found, and headers that ask
 * for what is not there or for an offset that would wrap. */
static void test_gpt_bytes(const unsigned char *img)
{
	unsigned char hdr[512];
	unsigned long long at;
	char uuid[40];
	int i;

	CHECK(part_uuid_from(img, img + 512, 512, 2, read_mem, (void *)img, uuid, sizeof(uuid)) == 0,
	      "GPT PARTUUID from memory");
	CHECK_STR(uuid, "13121110-1514-1716-1819-1a1b1c1d1e1f");
	CHECK(part_uuid_from(img, img + 512, 512, 2, read_none, NULL, uuid, sizeof(uuid)) == -1,
	      "an entry that cannot be read: no PARTUUID");
	CHECK(part_uuid_from(img, NULL, 512, 2, read_none, NULL, uuid, sizeof(uuid)) == 0,
	      "no GPT header read: the MBR's PARTUUID");
	CHECK_STR(uuid, "12345678-02");
	CHECK(gpt_entry_offset(img + 512, 512, 2, &at) == 0 && at == 1024 + 128, "entry 2 at byte 1152: %llu", at);
	CHECK(gpt_entry_offset(img + 512, 4096, 1, &at) == 0 && at == 8192, "4K blocks: entry 1 at 8192: %llu", at);
	CHECK(gpt_entry_offset(img + 512, 512, 5, &at) == -1, "entry 5 of 4 is refused");
	CHECK(gpt_entry_offset(img + 512, 512, 0, &at) == -1, "entry 0 is refused");
	memcpy(hdr, img + 512, 512);
	hdr[84] = 64;
	CHECK(gpt_entry_offset(hdr, 512, 1, &at) == -1, "entries under 128 bytes are refused");
	CHECK(part_uuid_from(img, hdr, 512, 1, read_mem, (void *)img, uuid, sizeof(uuid)) == -1,
	      "a GPT with entries under 128 bytes: no PARTUUID");
	/* entries at LBA 2^55: 2^55 * 512 wraps to 0, where the old sum read the MBR as entry 1 */
	memcpy(hdr, img + 512, 512);
	memset(hdr + 72, 0, 8);
	hdr[78] = 0x80;
	CHECK(gpt_entry_offset(hdr, 512, 1, &at) == -1, "an entry LBA that wraps when multiplied is refused: %llu", at);
	/* 2^62 in bytes fits; entry 2^32-1 of 2^32-1 bytes after it does not */
	hdr[78] = 0x20; /* LBA 2^53 */
	CHECK(gpt_entry_offset(hdr, 512, 1, &at) == 0 && at == 1ULL << 62, "LBA 2^53: byte 2^62: %llu", at);
	for (i = 80; i < 88; i++)
		hdr[i] = 0xff;
	CHECK(gpt_entry_offset(hdr, 512, 0xffffffffUL, &at) == -1, "an offset past what an off_t holds is refused");
	CHECK(gpt_entry_offset(hdr, ~0UL, 1, &at) == -1, "a block size that wraps the product is refused");
	/* no 0xEE entry, or no "EFI PART": the MBR's signature-NN */
	memcpy(hdr, img, 512);
	hdr[446 + 4] = 0x83;
	CHECK(part_uuid_from(hdr, img + 512, 512, 3, read_mem, (void *)img, uuid, sizeof(uuid)) == 0,
	      "MBR without 0xEE");
	CHECK_STR(uuid, "12345678-03");
	memcpy(hdr, img + 512, 512);
	hdr[0] = 'X';
	CHECK(part_uuid_from(img, hdr, 512, 1, read_mem, (void *)img, uuid, sizeof(uuid)) == 0, "0xEE, no EFI PART");
	CHECK_STR(uuid, "12345678-01");
}

static bool skip_vdb(const char *sysblock, const char *name)
{
	(void)sysblock;
	return strcmp(name, "vdb") == 0;
}

/* What disk_fs_type says of the first FS_SNIFF_LEN bytes of an image that cmd (a mkfs run, $F the file) makes. */
static const char *fs_of_mkfs(const char *cmd)
{
	static unsigned char b[FS_SNIFF_LEN];
	char file[128];
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "%s/fs.img", top);
	unlink(file);
	if (setenv("F", file, 1) != 0 || system(cmd) != 0)
		return "(mkfs failed)";
	fd = open(file, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, b, sizeof(b));
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(b) ? disk_fs_type(b, sizeof(b)) ? disk_fs_type(b, sizeof(b)) : "(none)" : "(short)";
}

/* live.iso=: which partitions may hold the ISO file is told from their first bytes. */
static void test_fs_type(void)
{
	static unsigned char b[FS_SNIFF_LEN];

	CHECK_STR(fs_of_mkfs("truncate -s 8M \"$F\" && mkfs.ext4 -q -F \"$F\" >/dev/null 2>&1"), "ext4");
	CHECK_STR(fs_of_mkfs("truncate -s 8M \"$F\" && mkfs.ext2 -q -F \"$F\" >/dev/null 2>&1"), "ext4");
	CHECK_STR(fs_of_mkfs("mkfs.vfat -C -F 12 \"$F\" 4096 >/dev/null"), "vfat");
	CHECK_STR(fs_of_mkfs("mkfs.vfat -C -F 16 \"$F\" 16384 >/dev/null"), "vfat");
	CHECK_STR(fs_of_mkfs("mkfs.vfat -C -F 32 \"$F\" 40960 >/dev/null"), "vfat");
	CHECK_STR(fs_of_mkfs("truncate -s 8M \"$F\" && mkfs.exfat \"$F\" >/dev/null"), "exfat");
	CHECK_STR(fs_of_mkfs("truncate -s 8M \"$F\" && mkswap \"$F\" >/dev/null"), "(none)");
	memset(b, 0, sizeof(b));
	CHECK(disk_fs_type(b, sizeof(b)) == NULL, "zeros are nothing");
	b[510] = 0x55;
	b[511] = 0xAA;
	memcpy(b + 3, "NTFS    ", 8);
	CHECK(disk_fs_type(b, sizeof(b)) && strcmp(disk_fs_type(b, sizeof(b)), "ntfs3") == 0, "NTFS");
	CHECK(disk_fs_type(b, 511) == NULL, "a boot sector cut short is nothing");
	memset(b + 3, 0, 8);
	memcpy(b + 82, "FAT32   ", 8);
	CHECK(disk_fs_type(b, sizeof(b)) == NULL, "FAT32's name with no sector size (an MBR that happens to match)");
	b[11] = 0x00;
	b[12] = 0x02;
	CHECK(disk_fs_type(b, sizeof(b)) && strcmp(disk_fs_type(b, sizeof(b)), "vfat") == 0, "FAT32, 512-byte sectors");
	b[12] = 0x03;
	CHECK(disk_fs_type(b, sizeof(b)) == NULL, "a 768-byte sector is no FAT");
	b[510] = 0;
	CHECK(disk_fs_type(b, sizeof(b)) == NULL, "no 55 AA, no FAT");
	memset(b, 0, sizeof(b));
	b[1024 + 0x38] = 0x53;
	b[1024 + 0x39] = 0xEF;
	CHECK(disk_fs_type(b, sizeof(b)) && strcmp(disk_fs_type(b, sizeof(b)), "ext4") == 0, "ext magic");
	CHECK(disk_fs_type(b, 1024 + 0x39) == NULL, "ext magic past the bytes given");
}

int main(void)
{
	static unsigned char img[4 * 512];
	static const unsigned char le[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
	char names[8][DISK_NAME_LEN], disk[DISK_NAME_LEN], uuid[40];
	int n, i;

	log_use_fd(2);
	CHECK(le16(le) == 0x0201 && le32(le) == 0x04030201UL && le64(le) == 0x0807060504030201ULL, "little-endian");
	snprintf(top, sizeof(top), "/tmp/init-disk-test.XXXXXX");
	CHECK(mkdtemp(top) != NULL, "mkdtemp");
	snprintf(sys, sizeof(sys), "%s/block", top);
	snprintf(devdir, sizeof(devdir), "%s/dev", top);
	/* sysfs: a partition's directory lies inside its disk's; class/block links to both */
	dir("devices");
	dir("devices/vda");
	dir("devices/vda/queue");
	put("devices/vda/queue/logical_block_size", "512\n");
	dir("devices/vda/vda1");
	put("devices/vda/vda1/partition", "1\n");
	dir("devices/vda/vda2");
	put("devices/vda/vda2/partition", "2\n");
	dir("devices/vdb");
	dir("block");
	link_to("../devices/vda", "block/vda");
	link_to("../devices/vda/vda2", "block/vda2");
	link_to("../devices/vda/vda1", "block/vda1");
	link_to("../devices/vdb", "block/vdb");
	dir("dev");

	CHECK(disk_is_partition(sys, "vda1") && !disk_is_partition(sys, "vda"), "partition attribute");
	CHECK(disk_of(sys, "/dev/vda2", disk, sizeof(disk)) == 0, "disk of vda2");
	CHECK_STR(disk, "vda");
	CHECK(disk_of(sys, "vda", disk, sizeof(disk)) == 0, "disk of vda");
	CHECK_STR(disk, "vda");
	n = disk_list(sys, "vda", NULL, names, 8);
	CHECK(n == 2 && strcmp(names[0], "vda1") == 0 && strcmp(names[1], "vda2") == 0, "partitions of vda, sorted: %d",
	      n);
	n = disk_list(sys, NULL, skip_vdb, names, 8);
	CHECK(n == 3 && strcmp(names[0], "vda") == 0 && strcmp(names[2], "vda2") == 0,
	      "every device but the skipped: %d", n);
	for (i = 0; i < n; i++)
		CHECK(strcmp(names[i], "vdb") != 0, "vdb skipped");
	CHECK(disk_list(sys, NULL, NULL, names, 2) == 2, "at most max");
	CHECK(disk_list("/nonexistent-sysfs", NULL, NULL, names, 8) == -1 && strstr(fail_what(), "/nonexistent-sysfs"),
	      "an unreadable sysfs is an error naming it: %s", fail_what());
	fail_clear();
	test_fs_type();

	/* MBR: the disk signature and the partition number */
	memset(img, 0, sizeof(img));
	memcpy(img + 440, "\x78\x56\x34\x12", 4);
	img[446 + 4] = 0x83;
	img[446 + 16 + 4] = 0x0c;
	img[510] = 0x55;
	img[511] = 0xAA;
	CHECK(mbr_has_entries(img), "MBR with entries");
	write_disk(img, sizeof(img));
	CHECK(disk_part_uuid(sys, devdir, "vda2", uuid, sizeof(uuid)) == 0, "MBR PARTUUID");
	CHECK_STR(uuid, "12345678-02");
	CHECK(disk_part_uuid(sys, devdir, "vda", uuid, sizeof(uuid)) == -1, "a whole disk has no PARTUUID");

	/* GPT behind a protective MBR: the entry's unique GUID, mixed-endian as the kernel prints it */
	memset(img + 446, 0, 64);
	CHECK(!mbr_has_entries(img), "MBR without entries");
	img[446 + 4] = 0xEE;
	memcpy(img + 512, "EFI PART", 8);
	img[512 + 72] = 2;   /* entries at LBA 2 */
	img[512 + 80] = 4;   /* 4 entries */
	img[512 + 84] = 128; /* of 128 bytes */
	for (i = 0; i < 16; i++)
		img[1024 + 128 + 16 + i] = (unsigned char)(0x10 + i); /* entry 2's unique GUID */
	write_disk(img, sizeof(img));
	CHECK(disk_part_uuid(sys, devdir, "vda2", uuid, sizeof(uuid)) == 0, "GPT PARTUUID");
	CHECK_STR(uuid, "13121110-1514-1716-1819-1a1b1c1d1e1f");
	test_gpt_bytes(img);
	img[510] = 0;
	write_disk(img, sizeof(img));
	CHECK(disk_part_uuid(sys, devdir, "vda2", uuid, sizeof(uuid)) == -1, "no MBR signature: no PARTUUID");
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
		CHECK(system(cmd) == 0, "clean up %s", top);
	}
	return t_summary();
}

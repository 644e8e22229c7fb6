/* Unit tests: what the persistence store reads from disks it does not trust (store_find.c, util.c, luks.c): the ext2/3/4
 * superblock, the LUKS2 header, the cluster size of FAT and exFAT boot sectors, and the walk over a file's block map
 * (a fake map); and which consoles a passphrase is asked on (ask.c). */
#include <errno.h>

#include "ask.h"
#include "init-test.h"
#include "log.h"
#include "luks.h"
#include "store.h"
#include "util.h"

struct fake {
	unsigned long long phys[16]; /* device block of each file block; past n the map cannot be asked */
	unsigned long long n;
	int calls;
};

static int fake_map(void *ctx, unsigned long long blk, unsigned long long *phys)
{
	struct fake *f = ctx;

	f->calls++;
	if (blk >= f->n) {
		errno = ERANGE;
		return -1;
	}
	*phys = f->phys[blk];
	return 0;
}

static void run_of(struct fake *f, unsigned long long start, unsigned long long n)
{
	unsigned long long i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++)
		f->phys[i] = start + i;
	f->n = n;
}

static void test_ext_sb(void)
{
	static const unsigned char uuid[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
					       0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	unsigned char b[1024];
	struct sb s;

	memset(b, 0, sizeof(b));
	memcpy(b + 0x78, "liveunion-rw", 12);
	store_sb_parse(b, &s);
	CHECK(!s.ext && !s.recover && !s.errors && s.label[0] == '\0' && s.uuid[0] == '\0',
	      "no ext magic: not ext, and nothing else read (label '%s')", s.label);
	b[0x38] = 0x53;
	b[0x39] = 0xEF;
	memcpy(b + 0x68, uuid, sizeof(uuid));
	store_sb_parse(b, &s);
	CHECK(s.ext && !s.recover && !s.errors, "ext magic 0xEF53: ext, clean");
	CHECK_STR(s.label, "liveunion-rw");
	CHECK_STR(s.uuid, "01234567-89ab-cdef-0123-456789abcdef");
	b[0x60] = 0x4; /* needs_recovery */
	b[0x3a] = 0x2; /* state: errors */
	memcpy(b + 0x78, "0123456789abcdefXYZ", 19);
	store_sb_parse(b, &s);
	CHECK(s.ext && s.recover && s.errors, "a journal to replay and errors are seen");
	CHECK_STR(s.label, "0123456789abcdef"); /* 16 bytes with no NUL: the field, terminated */
	b[0x38] = 0x54;
	store_sb_parse(b, &s);
	CHECK(!s.ext && !s.recover && !s.errors && s.label[0] == '\0', "a different magic is not ext");
}

static void test_fat(void)
{
	unsigned char boot[512];

	memset(boot, 0, sizeof(boot));
	CHECK(store_fat_cluster_bytes(boot) == 0, "no boot sector: no cluster size");
	memcpy(boot + 3, "mkfs.fat", 8);
	boot[0x0b] = 0x00; /* 512 bytes a sector */
	boot[0x0c] = 0x02;
	boot[0x0d] = 4; /* 4 sectors a cluster */
	CHECK(store_fat_cluster_bytes(boot) == 2048, "FAT: 512 * 4: %llu", store_fat_cluster_bytes(boot));
	boot[0x0c] = 0x10;
	boot[0x0d] = 128;
	CHECK(store_fat_cluster_bytes(boot) == 4096 * 128, "FAT: 4096 * 128: %llu", store_fat_cluster_bytes(boot));
	memset(boot, 0, sizeof(boot));
	memcpy(boot + 3, "EXFAT   ", 8);
	boot[0x6c] = 9; /* 512-byte sectors */
	boot[0x6d] = 3; /* 8 a cluster */
	CHECK(store_fat_cluster_bytes(boot) == 4096, "exFAT: 2^(9+3): %llu", store_fat_cluster_bytes(boot));
	boot[0x6c] = 12;
	boot[0x6d] = 13;
	CHECK(store_fat_cluster_bytes(boot) == 32ULL << 20, "exFAT: 32 MiB clusters: %llu",
	      store_fat_cluster_bytes(boot));
	boot[0x6c] = 200; /* no exFAT: a shift like that would be undefined */
	CHECK(store_fat_cluster_bytes(boot) == 0, "exFAT with a sector shift of 200: none");
	boot[0x6c] = 9;
	boot[0x6d] = 40;
	CHECK(store_fat_cluster_bytes(boot) == 0, "exFAT with a cluster shift of 40: none");
}

static void test_block_run(void)
{
	struct fake f;
	unsigned long long first = 0;
	char why[100];

	run_of(&f, 100, 8);
	CHECK(block_run(8 * 512, 2048, 512, fake_map, &f, &first, why, sizeof(why)) == 0 && first == 100,
	      "8 blocks in one run: from block 100: %s", why);
	CHECK(f.calls == 5, "the start and both ends of the two clusters asked: %d", f.calls);
	f.calls = 0;
	CHECK(block_run(8 * 512 - 100, 1000, 512, fake_map, &f, &first, why, sizeof(why)) == 0,
	      "a partial last block, a step of no whole blocks: %s", why);
	CHECK(f.calls == 17, "every block asked (twice) when the step is no whole number of blocks: %d", f.calls);
	f.phys[4] = 300, f.phys[5] = 301, f.phys[6] = 302, f.phys[7] = 303;
	CHECK(block_run(8 * 512, 2048, 512, fake_map, &f, &first, why, sizeof(why)) == -1 && strstr(why, "block 4"),
	      "a jump between clusters is seen: %s", why);
	run_of(&f, 100, 8);
	f.phys[1] = 500;
	CHECK(block_run(8 * 512, 0, 512, fake_map, &f, &first, why, sizeof(why)) == -1 && strstr(why, "block 1"),
	      "step 0: a jump after any block is seen: %s", why);
	f.phys[0] = 0;
	CHECK(block_run(8 * 512, 0, 512, fake_map, &f, &first, why, sizeof(why)) == -1 && strstr(why, "start"),
	      "a hole at the start: %s", why);
	run_of(&f, 100, 8);
	CHECK(block_run(0, 0, 512, fake_map, &f, &first, why, sizeof(why)) == -1 && strstr(why, "empty"),
	      "an empty file: %s", why);
	CHECK(block_run(4096, 0, 0, fake_map, &f, &first, why, sizeof(why)) == -1, "block size 0 is refused");
	/* (bytes + 511) / 512 would wrap to 0 blocks: nothing asked, "one run" */
	CHECK(block_run(~0ULL, 2048, 512, fake_map, &f, &first, why, sizeof(why)) == -1,
	      "2^64-1 bytes are not 8 blocks in one run: %s", why);
	/* start + b must not wrap onto a small block number */
	run_of(&f, ~0ULL - 1, 2);
	f.phys[1] = 0;
	CHECK(block_run(3 * 512, 0, 512, fake_map, &f, &first, why, sizeof(why)) == -1, "no wrap past 2^64");
}

static void test_luks(void)
{
	unsigned char b[512];
	struct luks_id id;

	memset(b, 0, sizeof(b));
	memcpy(b, "LUKS\xba\xbe\x00\x02", 8);
	memcpy(b + 24, "liveunion-rw", 12);
	memcpy(b + 168, "33ab887c-6435-471b-a25b-64f2b900f3a3", 36);
	CHECK(luks_id_parse(b, sizeof(b), &id) == 0, "a LUKS2 header");
	CHECK_STR(id.label, "liveunion-rw");
	CHECK_STR(id.uuid, "33ab887c-6435-471b-a25b-64f2b900f3a3");
	CHECK(luks_id_parse(b, 511, &id) == -1 && id.label[0] == '\0', "a header cut short is none");
	memset(b + 24, 'x', 48); /* no NUL in the field: 48 characters at most */
	b[30] = 0x07;
	CHECK(luks_id_parse(b, sizeof(b), &id) == 0 && strlen(id.label) == 48 && id.label[6] == '?',
	      "a label filling its field, a control character shown as ?: %s", id.label);
	b[7] = 1;
	CHECK(luks_id_parse(b, sizeof(b), &id) == -1, "LUKS1 is not taken for a store");
	b[7] = 2;
	b[4] = 0xbf;
	CHECK(luks_id_parse(b, sizeof(b), &id) == -1, "wrong magic");
}

static void test_consoles(void)
{
	char devs[4][32];

	CHECK(ask_consoles("tty0 ttyS0\n", devs, 4) == 2 && strcmp(devs[0], "/dev/tty0") == 0 &&
		      strcmp(devs[1], "/dev/ttyS0") == 0,
	      "screen and serial");
	CHECK(ask_consoles("ttyS0 ttyS0 tty0", devs, 4) == 2, "each console once");
	CHECK(ask_consoles("../sda ttyS1", devs, 4) == 1 && strcmp(devs[0], "/dev/ttyS1") == 0, "no paths");
	CHECK(ask_consoles("", devs, 4) == 0, "none listed");
	CHECK(ask_consoles("a b c d e f", devs, 4) == 4, "at most max");
}

int main(void)
{
	log_use_fd(2);
	test_luks();
	test_consoles();
	test_ext_sb();
	test_fat();
	test_block_run();
	return t_summary();
}

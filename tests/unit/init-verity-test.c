/* Unit tests: initramfs/init/verity.c before any device is made: the files of a layer on the (untrusted) medium
 * that the init reads itself, NAME.verity's superblock and a signed layer's NAME.roothash and NAME.roothash.p7s,
 * are refused unless they are regular files (a FIFO or a link to a terminal would block the init for ever), and a
 * signature put into the thread keyring is taken out again when the layer is refused. */
#include <errno.h>
#include <linux/keyctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init-test.h"
#include "log.h"
#include "plan.h"
#include "verity.h"

static char dir[] = "/tmp/init-verity.XXXXXX";

static void put(const char *name, const void *bytes, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f && fwrite(bytes, 1, n, f) == n && fclose(f) == 0, "write %s", path);
}

/* a veritysetup superblock: format 1, sha256, 4096-byte blocks, one data block, no salt */
static void put_sb(const char *name)
{
	unsigned char b[512] = "verity";

	b[8] = 1;
	b[12] = 1;
	memcpy(b + 32, "sha256", 6);
	b[65] = 0x10;
	b[69] = 0x10;
	b[72] = 1;
	put(name, b, sizeof(b));
}

/* verity_layer on layer 10-a of dir (signed or not): its result, fail() says why */
static int layer(bool sig, unsigned long long bytes)
{
	static struct plan p;
	static struct layer l;
	char dev[64];

	memset(&p, 0, sizeof(p));
	memset(&l, 0, sizeof(l));
	p.verify_mode = VERIFY_ON;
	snprintf(l.name, sizeof(l.name), "10-a");
	snprintf(l.file, sizeof(l.file), "%s/10-a.squashfs", dir);
	snprintf(l.hash_file, sizeof(l.hash_file), "%s/10-a.verity", dir);
	if (!sig)
		memset(l.root_hash, 'a', 64);
	l.sig = sig;
	l.bytes = bytes;
	l.loop = 7;
	l.hash_loop = l.dm_minor = -1;
	fail_clear();
	return verity_layer(&p, &l, dev, sizeof(dev));
}

static bool said(const char *what)
{
	if (strstr(fail_what(), what))
		return true;
	fprintf(stderr, "# wanted '%s' in: %s\n", what, fail_what());
	return false;
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

int main(void)
{
	char a[256], b[256], hex[66];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	/* an init that opens a FIFO and waits for a writer fails here instead of hanging the tests */
	alarm(30);
	path_of(a, sizeof(a), "10-a.verity");
	CHECK(mkfifo(a, 0644) == 0, "mkfifo %s", a);
	CHECK(layer(false, 4096) < 0 && said("REFUSED: its dm-verity hash tree") && said("10-a.verity is a FIFO"),
	      "FIFO hash tree");
	CHECK(unlink(a) == 0 && symlink("/dev/null", a) == 0, "symlink %s", a);
	CHECK(layer(false, 4096) < 0 && said("10-a.verity is a character device, not a regular file"),
	      "hash tree linked to a device");
	CHECK(unlink(a) == 0 && mkdir(a, 0755) == 0, "mkdir %s", a);
	CHECK(layer(false, 4096) < 0 && said("10-a.verity is a directory"), "a directory");
	CHECK(rmdir(a) == 0, "rmdir %s", a);
	put_sb("10-a.verity");
	/* the regular superblock is read: the size check after it speaks */
	CHECK(layer(false, 8192) < 0 && said("covers 4096 bytes, the layer has 8192"), "regular hash tree read");

	/* a signed layer: NAME.roothash, NAME.roothash.p7s */
	memset(hex, 'b', 64);
	hex[64] = '\n';
	path_of(a, sizeof(a), "10-a.roothash");
	path_of(b, sizeof(b), "10-a.roothash.p7s");
	CHECK(mkfifo(a, 0644) == 0, "mkfifo %s", a);
	CHECK(layer(true, 4096) < 0 && said("REFUSED: ") && said("10-a.roothash is a FIFO"), "FIFO root hash");
	CHECK(unlink(a) == 0, "unlink %s", a);
	put("hex", hex, 65);
	path_of(b, sizeof(b), "hex");
	CHECK(symlink(b, a) == 0, "symlink %s", a);
	CHECK(layer(true, 4096) < 0 && said("open ") && said("10-a.roothash (a symbolic link)"),
	      "root hash through a symbolic link, even to a regular file");
	CHECK(unlink(a) == 0, "unlink %s", a);
	put("10-a.roothash", hex, 65);
	path_of(b, sizeof(b), "10-a.roothash.p7s");
	CHECK(mkfifo(b, 0644) == 0, "mkfifo %s", b);
	CHECK(layer(true, 4096) < 0 && said("10-a.roothash.p7s is a FIFO"), "FIFO signature");
	CHECK(unlink(b) == 0, "unlink %s", b);

	/* the signature goes into the thread keyring, and out again when the layer is refused after it */
	put("10-a.roothash.p7s", "not a real signature", 20);
	CHECK(layer(true, 8192) < 0 && said("covers 4096 bytes, the layer has 8192"), "signed, refused by size");
	CHECK(!strstr(fail_what(), "add_key"), "the host's kernel takes user keys: %s", fail_what());
	errno = 0;
	CHECK(syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_THREAD_KEYRING, "user", "liveunion:10-a", 0) < 0 &&
		      errno == ENOKEY,
	      "key liveunion:10-a left in the thread keyring (errno %d)", errno);
	alarm(0);
	snprintf(a, sizeof(a), "rm -rf '%s'", dir);
	CHECK(system(a) == 0, "%s", a);
	return t_summary();
}

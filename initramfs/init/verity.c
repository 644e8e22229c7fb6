#include "verity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/dm-ioctl.h>
#include <linux/keyctl.h>

#include "disk.h"
#include "liveunion/contract.h"
#include "log.h"
#include "loop.h"
#include "progress.h"
#include "util.h"

/* What the first and last reads through dm-verity cover: the squashfs superblock and the tables at
 * the end of the image, which the mount reads anyway, so the check costs nothing extra. */
#define PROBE_BYTES (64u << 10)

/* veritysetup's on-disk superblock (cryptsetup lib/verity/verity.c), little-endian, 512 bytes. */
struct verity_sb {
	char algorithm[33];
	unsigned data_block_size, hash_block_size;
	unsigned long long data_blocks;
	unsigned salt_size;
	unsigned char salt[256];
};

static int pow2_in(unsigned v, unsigned lo, unsigned hi)
{
	return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

/* What a file that is not a regular one is, for the refusal. */
static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" :
	       S_ISCHR(m)  ? "a character device" :
	       S_ISBLK(m)  ? "a block device" :
	       S_ISDIR(m)  ? "a directory" :
	       S_ISSOCK(m) ? "a socket" :
			     "of another kind";
}

/* path opened to read, refused unless it is a regular file: the medium is untrusted, and a FIFO (Rock Ridge has
 * them) or a link to /dev/console there would block the init for ever at open or read. O_NONBLOCK keeps the open
 * from waiting; nofollow refuses a symbolic link itself (the small files: no reason to be one). The fd, or -1 with
 * fail() set naming the file. */
static int open_regular(const struct layer *l, const char *path, bool nofollow, const char *what)
{
	const char *sp = what[0] ? " " : "";
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0)), e = 0;

	if (fd < 0)
		return fail(errno, "layer %s: REFUSED: open %s%s%s%s", l->name, what, sp, path,
			    errno == ELOOP && nofollow ? " (a symbolic link)" : "");
	if (fstat(fd, &st) != 0)
		e = errno;
	else if (S_ISREG(st.st_mode))
		return fd;
	if (close(fd) != 0) {
		/* the refusal is the one to report */
	}
	if (e)
		return fail(e, "layer %s: REFUSED: fstat %s%s%s", l->name, what, sp, path);
	return fail(EINVAL, "layer %s: REFUSED: %s%s%s is %s, not a regular file", l->name, what, sp, path,
		    file_kind(st.st_mode));
}

static int read_sb(const struct layer *l, struct verity_sb *sb)
{
	unsigned char b[512];
	ssize_t n;
	int fd = open_regular(l, l->hash_file, false, "its dm-verity hash tree"), e;

	if (fd < 0)
		return -1;
	n = pread(fd, b, sizeof(b), 0);
	e = errno;
	if (close(fd) != 0)
		return fail(errno, "close %s", l->hash_file);
	if (n < 0)
		return fail(e, "layer %s: read the dm-verity superblock of %s", l->name, l->hash_file);
	if (n != (ssize_t)sizeof(b) || memcmp(b, "verity\0\0", 8) != 0 || le32(b + 8) != 1 || le32(b + 12) != 1)
		return fail(EINVAL, "layer %s: %s is not a veritysetup hash tree (format 1 with a superblock)", l->name,
			    l->hash_file);
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->algorithm, b + 32, 32);
	sb->data_block_size = (unsigned)le32(b + 64);
	sb->hash_block_size = (unsigned)le32(b + 68);
	sb->data_blocks = le64(b + 72);
	sb->salt_size = le16(b + 80);
	if (!pow2_in(sb->data_block_size, 512, 1u << 20) || !pow2_in(sb->hash_block_size, 512, 1u << 20) ||
	    sb->salt_size > sizeof(sb->salt) || !sb->algorithm[0] ||
	    strspn(sb->algorithm, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(sb->algorithm))
		return fail(EINVAL, "layer %s: the superblock of %s is damaged (block sizes %u/%u, salt %u bytes)",
			    l->name, l->hash_file, sb->data_block_size, sb->hash_block_size, sb->salt_size);
	memcpy(sb->salt, b + 88, sb->salt_size);
	return 0;
}

static void dm_init(struct dm_ioctl *io, size_t size, const char *name)
{
	memset(io, 0, sizeof(*io));
	io->version[0] = 4;
	io->data_size = (uint32_t)size;
	io->data_start = sizeof(*io);
	text_fmt(io->name, sizeof(io->name), "%s", name);
}

static void dm_remove(int ctl, const char *name)
{
	struct dm_ioctl io;

	dm_init(&io, sizeof(io), name);
	if (ioctl(ctl, DM_DEV_REMOVE, &io) != 0)
		msg("remove device-mapper device %s: %s", name, strerror(errno));
}

static int dev_of(const char *path, dev_t *d)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return fail(errno, "stat %s", path);
	*d = st.st_rdev;
	return 0;
}

/* Create name with one verity target; returns the dm minor or -1 with fail() set. */
static int dm_verity_create(const struct layer *l, const char *name, const char *params, unsigned long long sectors,
			    unsigned *major_out)
{
	static union {
		struct dm_ioctl io;
		char b[sizeof(struct dm_ioctl) + sizeof(struct dm_target_spec) + 1024];
	} u;
	struct dm_target_spec *t = (struct dm_target_spec *)(u.b + sizeof(u.io));
	size_t plen = strlen(params) + 1, size = sizeof(u.io) + sizeof(*t) + ((plen + 7) & ~(size_t)7);
	int ctl, minor, e, rc;

	if (size > sizeof(u.b))
		return fail(E2BIG, "layer %s: dm-verity table too long", l->name);
	ctl = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return fail(errno, "layer %s: open /dev/mapper/control (kernel without CONFIG_BLK_DEV_DM?)", l->name);
	dm_init(&u.io, sizeof(u.io), name);
	rc = ioctl(ctl, DM_DEV_CREATE, &u.io);
	if (rc != 0 && errno == EBUSY) {
		/* left by an earlier try of this step (the rescue shell retries it) */
		dm_remove(ctl, name);
		dm_init(&u.io, sizeof(u.io), name);
		rc = ioctl(ctl, DM_DEV_CREATE, &u.io);
	}
	if (rc != 0) {
		e = errno;
		goto close_fail_create;
	}
	minor = (int)minor((dev_t)u.io.dev);
	*major_out = major((dev_t)u.io.dev);
	memset(u.b, 0, size);
	dm_init(&u.io, size, name);
	u.io.flags = DM_READONLY_FLAG;
	u.io.target_count = 1;
	t->sector_start = 0;
	t->length = sectors;
	t->next = (uint32_t)(size - sizeof(u.io));
	memcpy(t->target_type, "verity", 7);
	memcpy(u.b + sizeof(u.io) + sizeof(*t), params, plen);
	if (ioctl(ctl, DM_TABLE_LOAD, &u.io) != 0) {
		e = errno;
		if (l->sig && e == EINVAL)
			fail(e,
			     "layer %s: REFUSED: the kernel does not take its root hash signature (a kernel without "
			     "CONFIG_DM_VERITY_VERIFY_ROOTHASH_SIG, or a damaged hash tree; dmesg says which)",
			     l->name);
		else if (l->sig)
			fail(e,
			     "layer %s: REFUSED: its root hash signature (%s" LAYER_SIG_SUFFIX ") is not by a key the "
			     "kernel trusts, or not of the root hash in %s" LAYER_ROOTHASH_SUFFIX,
			     l->name, l->name, l->name);
		else
			fail(e, "layer %s: load the dm-verity table \"%s\" into %s (the kernel log, dmesg, says why)",
			     l->name, params, name);
		goto remove;
	}
	dm_init(&u.io, sizeof(u.io), name); /* no DM_SUSPEND_FLAG: resume, which makes the table live */
	if (ioctl(ctl, DM_DEV_SUSPEND, &u.io) != 0) {
		e = errno;
		fail(e, "layer %s: activate device-mapper device %s", l->name, name);
		goto remove;
	}
	if (close(ctl) != 0)
		return fail(errno, "close /dev/mapper/control");
	return minor;
remove:
	dm_remove(ctl, name);
	if (close(ctl) != 0)
		msg("close /dev/mapper/control: %s", strerror(errno));
	return -1;
close_fail_create:
	if (close(ctl) != 0)
		msg("close /dev/mapper/control: %s", strerror(errno));
	return fail(e, "layer %s: create device-mapper device %s", l->name, name);
}

/* Read [off, off+len) of dev; an unreadable block is reported naming the layer and what it means. */
static int read_range(const struct layer *l, int fd, const char *dev, unsigned long long off, unsigned long long len,
		      struct progress *pr)
{
	static char buf[1 << 20];

	while (len > 0) {
		size_t want = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno == EIO && l->dm_minor >= 0)
				return fail(EIO,
					    "layer %s (%s): the data in bytes %llu-%llu does not match its root hash "
					    "from %s (medium damaged or altered; read through dm-verity %s)",
					    l->name, l->file, off, off + want - 1,
					    l->sig ? "its signed " LAYER_ROOTHASH_SUFFIX : "live.verify=", dev);
			return fail(errno, "layer %s (%s): read bytes %llu-%llu of %s", l->name, l->file, off,
				    off + want - 1, dev);
		}
		if (n == 0)
			return fail(EIO, "layer %s (%s): %s ends at byte %llu, before the layer does", l->name, l->file,
				    dev, off);
		off += (unsigned long long)n;
		len -= (unsigned long long)n;
		if (pr)
			progress_add(pr, (unsigned long long)n);
	}
	return 0;
}

static int open_dev(const struct layer *l, const char *dev)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail(errno, "layer %s: open %s", l->name, dev);
	return fd;
}

static int close_dev(int fd, const char *dev, int rc)
{
	if (close(fd) != 0 && rc == 0)
		return fail(errno, "close %s", dev);
	return rc;
}

/* path = the layer's hash_file with LAYER_VERITY_SUFFIX replaced by suffix. */
static int beside(const struct layer *l, const char *suffix, char *path, size_t len)
{
	size_t n = strlen(l->hash_file), v = sizeof(LAYER_VERITY_SUFFIX) - 1;

	if (n < v || strcmp(l->hash_file + n - v, LAYER_VERITY_SUFFIX) != 0)
		return fail(EINVAL, "layer %s: hash tree %s is not NAME" LAYER_VERITY_SUFFIX, l->name, l->hash_file);
	return path_fmt(path, len, "%.*s%s", (int)(n - v), l->hash_file, suffix);
}

/* Up to cap bytes of path into buf, which holds cap + 1 (one more is read to see a longer file, which is refused:
 * these are a hex line and a small signature). */
static int read_small(const struct layer *l, const char *path, unsigned char *buf, size_t cap, size_t *len)
{
	size_t got = 0;
	ssize_t n = 1;
	int fd = open_regular(l, path, true, ""), e = 0;

	if (fd < 0)
		return -1;
	while (got <= cap && n != 0) {
		n = read(fd, buf + got, cap + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			break;
		}
		got += (size_t)n;
	}
	if (close(fd) != 0 && !e)
		e = errno;
	if (e)
		return fail(e, "layer %s: REFUSED: read %s", l->name, path);
	if (got > cap || got == 0)
		return fail(EINVAL, "layer %s: REFUSED: %s is %s", l->name, path, got ? "too long" : "empty");
	*len = got;
	return 0;
}

/* A signed layer: its root hash from NAME.roothash (hex; a final newline allowed) and its signature from
 * NAME.roothash.p7s put into this thread's keyring as a "user" key, where dm-verity finds it by the description
 * the table names (root_hash_sig_key_desc). Neither file is trusted: the kernel checks the signature against its
 * trusted keyring when the table is loaded, and then every block against the hash. The key's id, or -1. */
static long sig_load(struct layer *l, char *desc, size_t dlen)
{
	static unsigned char sig[16384]; /* a user key holds at most 32767 bytes; ours are about 440 */
	unsigned char hex[ROOT_HASH_LEN + 2];
	char path[PATH_LEN];
	size_t n = 0, i;
	long key;

	if (beside(l, LAYER_ROOTHASH_SUFFIX, path, sizeof(path)) != 0 ||
	    read_small(l, path, hex, sizeof(hex) - 1, &n) != 0)
		return -1;
	if (hex[n - 1] == '\n')
		n--;
	for (i = 0; i < n && strchr("0123456789abcdef", hex[i]) && hex[i]; i++)
		;
	if (i != n || n < 32 || n % 2 || n > ROOT_HASH_LEN)
		return fail(EINVAL, "layer %s: REFUSED: %s is not a root hash (32-%d lowercase hex digits)", l->name,
			    path, ROOT_HASH_LEN);
	memcpy(l->root_hash, hex, n);
	l->root_hash[n] = '\0';
	if (beside(l, LAYER_SIG_SUFFIX, path, sizeof(path)) != 0 || read_small(l, path, sig, sizeof(sig) - 1, &n) != 0)
		return -1;
	text_fmt(desc, dlen, "liveunion:%s", l->name);
	key = syscall(SYS_add_key, "user", desc, sig, n, KEY_SPEC_THREAD_KEYRING);
	if (key < 0)
		return fail(errno, "layer %s: put its signature %s into the keyring (add_key%s)", l->name, path,
			    errno == ENOSYS ? ": a kernel without CONFIG_KEYS" : "");
	return key;
}

/* A signature's key (sig_load) out of the thread keyring: once the table is loaded (the kernel copied it), and on
 * every way out before that, so none is left behind for what runs later. */
static void key_drop(const struct layer *l, long key, const char *desc)
{
	if (key >= 0 && syscall(SYS_keyctl, KEYCTL_UNLINK, key, KEY_SPEC_THREAD_KEYRING) != 0)
		msg("layer %s: unlink key %s: %s", l->name, desc, strerror(errno));
}

int verity_layer(const struct plan *p, struct layer *l, char *dev, size_t dlen)
{
	struct verity_sb sb;
	char data[32], hash[32], name[80], params[900], salt[513], node[PATH_LEN], desc[80] = "";
	long key = -1;
	unsigned long long bytes;
	dev_t dd, hd;
	unsigned i, dm_major = 0;
	int hfd, minor, fd, rc;

	if (path_fmt(dev, dlen, "/dev/loop%d", l->loop) != 0)
		return -1;
	if (p->verify_mode != VERIFY_ON)
		return 0;
	if (!l->root_hash[0] && !l->sig) /* plan_root_hash or layer_sig said why when the layer was chosen */
		return fail(ENOKEY, "layer %s (%s): %s", l->name, l->file, l->no_hash);
	if (read_sb(l, &sb) != 0)
		return -1;
	if (l->sig && (key = sig_load(l, desc, sizeof(desc))) < 0)
		return -1;
	bytes = sb.data_blocks * sb.data_block_size;
	if (bytes != l->bytes) {
		key_drop(l, key, desc);
		return fail(EINVAL, "layer %s: the hash tree %s covers %llu bytes, the layer has %llu", l->name,
			    l->hash_file, bytes, l->bytes);
	}
	for (i = 0; i < sb.salt_size; i++) {
		salt[2 * i] = "0123456789abcdef"[sb.salt[i] >> 4];
		salt[2 * i + 1] = "0123456789abcdef"[sb.salt[i] & 15];
	}
	salt[2 * i] = '\0';
	if (!sb.salt_size)
		memcpy(salt, "-", 2);
	hfd = loop_attach(l->hash_file, true, 0, 0, &l->hash_loop);
	if (hfd < 0) {
		key_drop(l, key, desc);
		return -1;
	}
	text_fmt(data, sizeof(data), "/dev/loop%d", l->loop);
	text_fmt(hash, sizeof(hash), "/dev/loop%d", l->hash_loop);
	text_fmt(name, sizeof(name), "live-%s", l->name);
	if (dev_of(data, &dd) != 0 || dev_of(hash, &hd) != 0) {
		key_drop(l, key, desc);
		return close_dev(hfd, hash, -1);
	}
	/* The hash area starts right after veritysetup's superblock: hash block 1. */
	if (path_fmt(params, sizeof(params), "1 %u:%u %u:%u %u %u %llu 1 %s %s %s%s%s", major(dd), minor(dd), major(hd),
		     minor(hd), sb.data_block_size, sb.hash_block_size, sb.data_blocks, sb.algorithm, l->root_hash,
		     salt, desc[0] ? " 2 root_hash_sig_key_desc " : "", desc) != 0) {
		key_drop(l, key, desc);
		return close_dev(hfd, hash, -1);
	}
	minor = dm_verity_create(l, name, params, bytes >> 9, &dm_major);
	/* the kernel copied the signature at the table load: the key is not needed after it */
	key_drop(l, key, desc);
	/* dm holds the hash loop device open now; autoclear frees it when the dm device goes */
	if (close_dev(hfd, hash, minor < 0 ? -1 : 0) != 0)
		return -1;
	l->dm_minor = minor;
	if (path_fmt(dev, dlen, "/dev/dm-%d", minor) != 0)
		return -1;
	/* devtmpfs normally has the node already */
	if (access(dev, F_OK) != 0 && mknod(dev, S_IFBLK | 0600, makedev(dm_major, (unsigned)minor)) != 0 &&
	    errno != EEXIST)
		return fail(errno, "mknod %s", dev);
	/* /dev/mapper/live-NAME for people in the live system; nothing depends on it */
	if (path_fmt(node, sizeof(node), "/dev/mapper/%s", name) == 0 &&
	    mknod(node, S_IFBLK | 0600, makedev(dm_major, (unsigned)minor)) != 0 && errno != EEXIST)
		dbg("mknod %s: %s", node, strerror(errno));
	fd = open_dev(l, dev);
	if (fd < 0)
		return -1;
	rc = read_range(l, fd, dev, 0, bytes < PROBE_BYTES ? bytes : PROBE_BYTES, NULL);
	if (rc == 0 && bytes > PROBE_BYTES)
		rc = read_range(l, fd, dev, bytes - PROBE_BYTES, PROBE_BYTES, NULL);
	if (close_dev(fd, dev, rc) != 0)
		return -1;
	msg("layer %s: dm-verity %s (%s) over %s and %s, root hash %.16s...%s", l->name, dev, name, data, hash,
	    l->root_hash,
	    l->sig ? " (signed: the kernel checked " LAYER_SIG_SUFFIX " against its trusted keyring)" : "");
	return 0;
}

int verity_check(const struct layer *l, const char *dev)
{
	char what[96];
	struct progress pr;
	double s;
	int fd, rc;

	fd = open_dev(l, dev);
	if (fd < 0)
		return -1;
	text_fmt(what, sizeof(what), "live.check %s", l->name);
	progress_start(&pr, what, l->bytes);
	rc = read_range(l, fd, dev, 0, l->bytes, &pr);
	if (close_dev(fd, dev, rc) != 0) {
		progress_end(&pr); /* where it stopped */
		msg("live.check: layer %s FAILED", l->name);
		return -1;
	}
	s = progress_end(&pr);
	msg("live.check: layer %s passed: %llu bytes read %s in %.1f s", l->name, l->bytes,
	    l->dm_minor >= 0 ? "through dm-verity" : "(not verified: only unreadable blocks would show)", s);
	return 0;
}

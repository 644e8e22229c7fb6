#include "verity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/dm-ioctl.h>

#include "disk.h"
#include "liveunion/contract.h"
#include "log.h"
#include "loop.h"
#include "progress.h"
#include "util.h"
#include "verity_files.h"

/* What the first and last reads through dm-verity cover: the squashfs superblock and the tables at
 * the end of the image, which the mount reads anyway, so the check costs nothing extra. */
#define PROBE_BYTES (64u << 10)

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

/* The verity target's parameters: l's data and hash devices, the superblock's sizes, algorithm and salt, the root
 * hash, and the signature's key (desc) when the layer is signed. The hash area starts right after veritysetup's
 * superblock: hash block 1. */
static int verity_table(const struct layer *l, const struct verity_sb *sb, dev_t dd, dev_t hd, const char *desc,
			char *params, size_t plen)
{
	char salt[513];
	unsigned i;

	for (i = 0; i < sb->salt_size; i++) {
		salt[2 * i] = "0123456789abcdef"[sb->salt[i] >> 4];
		salt[2 * i + 1] = "0123456789abcdef"[sb->salt[i] & 15];
	}
	salt[2 * i] = '\0';
	if (!sb->salt_size)
		memcpy(salt, "-", 2);
	return path_fmt(params, plen, "1 %u:%u %u:%u %u %u %llu 1 %s %s %s%s%s", major(dd), minor(dd), major(hd),
			minor(hd), sb->data_block_size, sb->hash_block_size, sb->data_blocks, sb->algorithm,
			l->root_hash, salt, desc[0] ? " 2 root_hash_sig_key_desc " : "", desc);
}

int verity_layer(const struct plan *p, struct layer *l, char *dev, size_t dlen)
{
	struct verity_sb sb;
	char data[32], hash[32], name[80], params[900], node[PATH_LEN], desc[80] = "";
	long key = -1;
	unsigned long long bytes;
	dev_t dd, hd;
	unsigned dm_major = 0;
	int hfd, minor, fd, rc;

	if (path_fmt(dev, dlen, "/dev/loop%d", l->loop) != 0)
		return -1;
	if (p->verify_mode != VERIFY_ON)
		return 0;
	if (!l->root_hash[0] && !l->sig) /* plan_root_hash or layer_sig said why when the layer was chosen */
		return fail(ENOKEY, "layer %s (%s): %s", l->name, l->file, l->no_hash);
	if (verity_read_sb(l, &sb) != 0)
		return -1;
	if (l->sig && (key = verity_sig_load(l, desc, sizeof(desc))) < 0)
		return -1;
	bytes = sb.data_blocks * sb.data_block_size;
	if (bytes != l->bytes) {
		verity_key_drop(l, key, desc);
		return fail(EINVAL, "layer %s: the hash tree %s covers %llu bytes, the layer has %llu", l->name,
			    l->hash_file, bytes, l->bytes);
	}
	hfd = loop_attach(l->hash_file, true, 0, 0, &l->hash_loop);
	if (hfd < 0) {
		verity_key_drop(l, key, desc);
		return -1;
	}
	text_fmt(data, sizeof(data), "/dev/loop%d", l->loop);
	text_fmt(hash, sizeof(hash), "/dev/loop%d", l->hash_loop);
	text_fmt(name, sizeof(name), "live-%s", l->name);
	if (dev_of(data, &dd) != 0 || dev_of(hash, &hd) != 0) {
		verity_key_drop(l, key, desc);
		return close_dev(hfd, hash, -1);
	}
	if (verity_table(l, &sb, dd, hd, desc, params, sizeof(params)) != 0) {
		verity_key_drop(l, key, desc);
		return close_dev(hfd, hash, -1);
	}
	minor = dm_verity_create(l, name, params, bytes >> 9, &dm_major);
	/* the kernel copied the signature at the table load: the key is not needed after it */
	verity_key_drop(l, key, desc);
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

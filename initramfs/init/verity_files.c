/* The files of a layer the init reads itself before dm-verity (verity_files.h): refused unless regular. */
#include "verity_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/keyctl.h>

#include "disk.h"
#include "liveunion/contract.h"
#include "log.h"
#include "util.h"

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

int verity_read_sb(const struct layer *l, struct verity_sb *sb)
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
long verity_sig_load(struct layer *l, char *desc, size_t dlen)
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
void verity_key_drop(const struct layer *l, long key, const char *desc)
{
	if (key >= 0 && syscall(SYS_keyctl, KEYCTL_UNLINK, key, KEY_SPEC_THREAD_KEYRING) != 0)
		msg("layer %s: unlink key %s: %s", l->name, desc, strerror(errno));
}

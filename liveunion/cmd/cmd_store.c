/* cmd_store.c - `liveunion store`: the persistence store's own tools. This file: the subcommand table, status,
 * reset and passphrase; store_copy.c backs up and restores, store_grow.c grows. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

#define STORE_DIR LIVE_RUN "/" LIVE_STORE
/* a store's directory, its STORE_VDIR, and a path under that: room for each (no silent truncation) */
#define VDIR_LEN (PATH_MAX + 32)
#define SUB_LEN (PATH_MAX + 512)

static const struct subcmd subs[] = {
	{"status", store_status, "[--store DIR]", "size, free space, format, last image, encryption, what fills it"},
	{"passphrase", store_passphrase, "[--recovery-key] [--key-file F] [--new-key-file F] [--store DIR]",
	 "change the LUKS2 passphrase, or add a recovery key"},
	{"backup", store_backup, "DEST [--store DIR]",
	 "copy the store, frozen for a consistent copy, to a file or device"},
	{"restore", store_restore, "SRC --to DEVICE", "write a backup onto a store device that is not in use"},
	{"reset", store_reset, "[--cancel] [--store DIR]",
	 "start with an empty upper at the next boot (live.persist.reset)"},
	{"grow", store_grow, "[--store DIR]", "use the rest of the stick (partition) or of its FAT/exFAT (file)"},
};

static void store_usage(FILE *f)
{
	fprintf(f, "usage: " PROG " store COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
		fprintf(f, "  %-10s %s\n             %s\n", subs[i].name, subs[i].args, subs[i].help);
	fprintf(f, "\nDIR is where the store is mounted (default " STORE_DIR "). See liveunion(1).\n");
}

int cmd_store(int argc, char **argv)
{
	return subcmd_run(PROG " store", subs, sizeof subs / sizeof subs[0], store_usage, argc, argv);
}

/* The options every store subcommand takes: --store DIR, and the ones it names in opts ("--cancel", ...: flags;
 * "--key-file=": with a value). Positional arguments land in pos[] (up to npos). 0, or 2 after saying what was
 * wrong. */
int store_args(const char *sub, int argc, char **argv, const char *const *opts, const char **vals, const char **dir,
	       const char **pos, int npos)
{
	int got = 0;

	*dir = STORE_DIR;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t k;
		int known = 0;

		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return 3;
		if (!strcmp(a, "--store")) {
			if (++i >= argc)
				goto needs_value;
			*dir = argv[i];
			continue;
		}
		for (k = 0; opts && opts[k]; k++) {
			size_t n = strlen(opts[k]);
			int valued = opts[k][n - 1] == '=';

			if (strncmp(a, opts[k], valued ? n - 1 : n) != 0 || a[valued ? n - 1 : n] != '\0')
				continue;
			known = 1;
			if (valued) {
				if (++i >= argc)
					goto needs_value;
				vals[k] = argv[i];
			} else {
				vals[k] = a;
			}
		}
		if (known)
			continue;
		if (a[0] == '-' && a[1]) {
			fprintf(stderr, PROG " store %s: unknown option '%s' ('" PROG " store --help' lists them)\n",
				sub, a);
			return 2;
		}
		if (got >= npos) {
			fprintf(stderr, PROG " store %s: unexpected argument '%s'\n", sub, a);
			return 2;
		}
		pos[got++] = a;
		continue;
needs_value:
		fprintf(stderr, PROG " store %s: %s needs a value\n", sub, a);
		return 2;
	}
	for (int k = got; k < npos; k++)
		pos[k] = NULL;
	return 0;
}

/* "12.3 MiB" */
void human(unsigned long long b, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		pfmt(buf, len, "%llu B", b);
	else
		pfmt(buf, len, "%.1f %s", v, unit[u]);
}

static unsigned long long du_total;
static dev_t du_dev;
static int du_add(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	if (sb->st_dev == du_dev)
		du_total += (unsigned long long)sb->st_blocks * 512;
	return 0;
}

/* Bytes the tree at path takes on its file system (blocks, not lengths: a sparse file counts what it holds). */
static unsigned long long du(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) != 0)
		return 0;
	du_total = 0;
	du_dev = sb.st_dev;
	if (nftw(path, du_add, 32, FTW_PHYS | FTW_MOUNT) != 0)
		return du_total;
	return du_total;
}

struct fill {
	char name[SUB_LEN];
	unsigned long long bytes;
};

static int fill_cmp(const void *a, const void *b)
{
	const struct fill *x = a, *y = b;

	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->name, y->name);
}

#define FILL_MAX 256
#define FILL_SHOWN 8

/* Adds each entry of dir (shown as prefix/name) to f[], measured. */
static void fill_dir(const char *dir, const char *prefix, struct fill *f, int *n)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) && *n < FILL_MAX) {
		char path[SUB_LEN];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		pfmt(path, sizeof path, "%s/%s", dir, e->d_name);
		pfmt(f[*n].name, sizeof f[*n].name, "%s/%s", prefix, e->d_name);
		f[*n].bytes = du(path);
		(*n)++;
	}
	closedir(d);
}

/* What fills the store: the top-level directories of the upper and of paths/, the saved layers, and what
 * earlier resets kept aside, largest first. */
static void status_fill(const char *vdir)
{
	static struct fill f[FILL_MAX];
	char path[SUB_LEN], size[32];
	struct dirent *e;
	DIR *d;
	int n = 0;

	pfmt(path, sizeof path, "%s/" STORE_UPPER, vdir);
	fill_dir(path, STORE_UPPER, f, &n);
	pfmt(path, sizeof path, "%s/" STORE_PATHS, vdir);
	fill_dir(path, STORE_PATHS, f, &n);
	pfmt(path, sizeof path, "%s/" STORE_LAYERS, vdir);
	fill_dir(path, STORE_LAYERS, f, &n);
	if ((d = opendir(vdir))) {
		while ((e = readdir(d)) && n < FILL_MAX)
			if (strstr(e->d_name, ".reset-")) {
				pfmt(path, sizeof path, "%s/%s", vdir, e->d_name);
				pfmt(f[n].name, sizeof f[n].name, "%s", e->d_name);
				f[n++].bytes = du(path);
			}
		closedir(d);
	}
	qsort(f, (size_t)n, sizeof f[0], fill_cmp);
	printf("  what fills it (largest first, " STORE_VDIR "/):\n");
	if (!n)
		printf("    nothing yet\n");
	for (int i = 0; i < n && i < FILL_SHOWN; i++) {
		human(f[i].bytes, size, sizeof size);
		printf("    %10s  %s\n", size, f[i].name);
	}
	if (n > FILL_SHOWN)
		printf("    ... and %d more\n", n - FILL_SHOWN);
}

/* The meta file's lines that say which image used the store, as they are. */
static void status_meta(const char *vdir)
{
	static const char *const keys[] = {"image",          "last_used",     "created",
					   "previous_image", "image_changed", "format"};
	static const char *const says[] = {"last image",   "last used",     "created",
					   "image before", "image changed", "store format"};
	char path[SUB_LEN], line[512];
	FILE *f;

	pfmt(path, sizeof path, "%s/" STORE_META, vdir);
	if (!(f = fopen(path, "r"))) {
		printf("  %-14s %s\n", "last image",
		       errno == ENOENT ? "none yet (no meta file: never booted with)" : strerror(errno));
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char *eq = strchr(line, '=');

		line[strcspn(line, "\n")] = '\0';
		if (!eq)
			continue;
		*eq = '\0';
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (!strcmp(line, keys[i]))
				printf("  %-14s %s\n", says[i], eq + 1);
	}
	fclose(f);
}

int store_status(int argc, char **argv)
{
	struct store_info st;
	struct statvfs vfs;
	const char *dir, *pos[1];
	char fmt[PATH_MAX + 300], vdir[PATH_MAX], path[PATH_MAX], a[32], b[32], c[32];
	unsigned long long total, avail, used;
	int r = store_args("status", argc, argv, NULL, NULL, &dir, pos, 0);

	if (r) {
		printf("usage: " PROG " store status [--store DIR]\n"
		       "Size, free space, format, the image that last used it, encryption, and what fills it.\n");
		return r == 3 ? 0 : 2;
	}
	if (store_find(PROG " store status", dir, &st) != 0)
		return 1;
	if (statvfs(st.dir, &vfs) != 0) {
		fprintf(stderr, PROG " store status: statvfs %s: %s\n", st.dir, strerror(errno));
		return 1;
	}
	total = (unsigned long long)vfs.f_blocks * vfs.f_frsize;
	avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	used = total - (unsigned long long)vfs.f_bfree * vfs.f_frsize;
	store_format_text(&st, fmt, sizeof fmt);
	human(total, a, sizeof a);
	human(avail, b, sizeof b);
	human(blk_bytes(st.under), c, sizeof c);
	printf("store %s (%s)\n", st.dir, st.ro ? "read-only" : "read-write");
	printf("  %-14s %s\n", "format", fmt);
	printf("  %-14s %s\n", "encrypted", st.luks ? "yes (LUKS2)" : "no");
	printf("  %-14s %s of ext4 (%s device)\n", "size", a, c);
	/* as df counts it: of what users may fill (root's reserved blocks left out), rounded up */
	printf("  %-14s %s (%llu%% used)%s\n", "free", b,
	       used + avail ? (used * 100 + used + avail - 1) / (used + avail) : 0,
	       avail == 0 ? ": FULL, writes fail (delete files, or 'liveunion store grow')" : "");
	pfmt(vdir, sizeof vdir, "%s/" STORE_VDIR, st.dir);
	status_meta(vdir);
	pfmt(path, sizeof path, "%s/" STORE_RESET, vdir);
	printf("  %-14s %s\n", "reset",
	       access(path, F_OK) == 0 ? "asked for: the next boot starts an empty upper" : "no");
	status_fill(vdir);
	return 0;
}

/* Writes text to vdir/name through a fsynced temporary file renamed over it, then fsyncs the directory. */
static int write_small(const char *vdir, const char *name, const char *text)
{
	char path[SUB_LEN], tmp[PATH_MAX + 8];
	size_t n = strlen(text);
	int fd, dfd;

	pfmt(path, sizeof path, "%s/%s", vdir, name);
	pfmt(tmp, sizeof tmp, "%s.new", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, PROG " store: create %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	if (write(fd, text, n) != (ssize_t)n || fsync(fd) != 0) {
		fprintf(stderr, PROG " store: write %s: %s\n", tmp, strerror(errno ? errno : EIO));
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, PROG " store: write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	if ((dfd = open(vdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fsync(dfd) != 0) {
		fprintf(stderr, PROG " store: fsync %s: %s\n", vdir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
}

int store_reset(int argc, char **argv)
{
	static const char *const opts[] = {"--cancel", NULL};
	const char *vals[1] = {NULL}, *dir, *pos[1];
	char vdir[VDIR_LEN], path[PATH_MAX], text[128], now[40];
	struct store_info st;
	time_t t = time(NULL);
	struct tm tm;
	int r = store_args("reset", argc, argv, opts, vals, &dir, pos, 0);

	if (r) {
		printf("usage: " PROG " store reset [--cancel] [--store DIR]\n"
		       "At the next boot, move the store's changes aside (" STORE_VDIR "/" STORE_UPPER
		       ".reset-DATE, never deleted)\nand start with an empty upper, as the boot parameter "
		       "live.persist.reset does. --cancel takes the request back.\n");
		return r == 3 ? 0 : 2;
	}
	if (store_find(PROG " store reset", dir, &st) != 0)
		return 1;
	pfmt(vdir, sizeof vdir, "%s/" STORE_VDIR, st.dir);
	pfmt(path, sizeof path, "%s/" STORE_RESET, vdir);
	if (st.ro) {
		fprintf(stderr,
			PROG " store reset: the store on %s is mounted read-only (live.persist.ro, "
			     "live.persist=off or a write-protected stick): the request cannot be written; "
			     "boot with live.persist.reset instead\n",
			st.dir);
		return 1;
	}
	if (access(vdir, F_OK) != 0) {
		fprintf(stderr, PROG " store reset: %s: %s (not a liveunion store)\n", vdir, strerror(errno));
		return 1;
	}
	if (vals[0]) {
		int gone = unlink(path);

		if (gone != 0 && errno != ENOENT) {
			fprintf(stderr, PROG " store reset --cancel: remove %s: %s\n", path, strerror(errno));
			return 1;
		}
		printf("reset: %s: the next boot keeps the store's changes\n",
		       gone != 0 ? "none was asked for" : "request taken back");
		return 0;
	}
	if (!gmtime_r(&t, &tm) || !strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm))
		pfmt(now, sizeof now, "unknown");
	pfmt(text, sizeof text, "asked=%s\n", now);
	if (write_small(vdir, STORE_RESET, text) != 0)
		return 1;
	printf("reset: asked for (%s/" STORE_RESET "): the next boot moves " STORE_UPPER "/ (and " STORE_PATHS
	       "/) aside to " STORE_UPPER ".reset-DATE, never deleted, and starts empty, as live.persist.reset does.\n"
	       "This session's changes still go to the store until then. "
	       "'" PROG " store reset --cancel' takes it back.\n",
	       vdir);
	return 0;
}

/* A recovery key: 32 random bytes as 8 groups of 8 characters of an alphabet without look-alikes. */
static int recovery_key(char *out, size_t len)
{
	static const char abc[] = "abcdefghjkmnpqrstuvwxyz23456789"; /* 31 letters: no i, l, o, 0, 1 */
	unsigned char raw[64];
	size_t o = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
		fprintf(stderr, PROG " store passphrase: reading /dev/urandom: %s\n", strerror(errno ? errno : EIO));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	for (size_t i = 0, g = 0; i < sizeof raw && o + 2 < len && g < 64; i++) {
		if (raw[i] >= 31 * 8) /* uniform: only bytes below a multiple of 31 */
			continue;
		if (g && g % 8 == 0)
			out[o++] = '-';
		out[o++] = abc[raw[i] % 31];
		g++;
		if (g == 48)
			break;
	}
	out[o] = '\0';
	if (o < 48 + 5) { /* few bytes usable: draw again */
		return recovery_key(out, len);
	}
	return 0;
}

/* The key slot cost of ./build.sh usb (iso/mkusb.sh LUKS_KDF_*): fixed, not measured here, so a slot made on a
 * fast machine still opens on a small one within its memory. */
#define KDF_ARGS \
	"--pbkdf", "argon2id", "--pbkdf-memory", "65536", "--pbkdf-force-iterations", "4", "--pbkdf-parallel", "1"

int store_passphrase(int argc, char **argv)
{
	static const char *const opts[] = {"--recovery-key", "--key-file=", "--new-key-file=", NULL};
	const char *vals[3] = {NULL, NULL, NULL}, *dir, *pos[1];
	char dev[STORE_NAME_LEN + 8], key[80];
	struct store_info st;
	int r = store_args("passphrase", argc, argv, opts, vals, &dir, pos, 0), p[2];

	if (r) {
		printf("usage: " PROG
		       " store passphrase [--recovery-key] [--key-file F] [--new-key-file F] [--store DIR]\n"
		       "Change the passphrase of the encrypted (LUKS2) store, asked on the terminal by cryptsetup\n"
		       "(--key-file: the current one from a file, --new-key-file: the new one), or with\n"
		       "--recovery-key add a new random key in a key slot of its own and print it once.\n");
		return r == 3 ? 0 : 2;
	}
	if (store_find(PROG " store passphrase", dir, &st) != 0)
		return 1;
	if (!st.luks) {
		char fmt[PATH_MAX + 300];

		store_format_text(&st, fmt, sizeof fmt);
		fprintf(stderr,
			PROG " store passphrase: the store is not encrypted (%s): it has no passphrase. "
			     "An encrypted stick is made with './build.sh usb --encrypt'.\n",
			fmt);
		return 1;
	}
	if (vals[0] && vals[2]) {
		fprintf(stderr, PROG " store passphrase: --recovery-key makes its own key: --new-key-file is not used "
				     "with it\n");
		return 2;
	}
	pfmt(dev, sizeof dev, "/dev/%s", st.under);
	if (!vals[0]) {
		const char *cmd[24] = {"cryptsetup", "luksChangeKey", KDF_ARGS};
		int n = 10;

		if (vals[1]) {
			cmd[n++] = "--key-file";
			cmd[n++] = vals[1];
		}
		cmd[n++] = dev;
		if (vals[2])
			cmd[n++] = vals[2];
		cmd[n] = NULL;
		printf("passphrase: changing the passphrase of %s (LUKS2) with cryptsetup luksChangeKey\n", dev);
		r = store_run(cmd, -1);
		if (r != 0) {
			fprintf(stderr,
				PROG " store passphrase: cryptsetup luksChangeKey %s failed (exit %d): the passphrase "
				     "is unchanged\n",
				dev, r);
			return 1;
		}
		printf("passphrase: changed; the old one no longer opens %s\n", dev);
		return 0;
	}
	if (recovery_key(key, sizeof key) != 0)
		return 1;
	if (pipe(p) != 0) {
		fprintf(stderr, PROG " store passphrase: pipe: %s\n", strerror(errno));
		return 1;
	}
	{
		/* the new key reaches cryptsetup through a pipe, by its /proc/self/fd name: never in a file, never on argv */
		char newkey[32];
		const char *cmd[24] = {"cryptsetup", "luksAddKey", KDF_ARGS};
		int n = 10;
		size_t kl = strlen(key);

		if (write(p[1], key, kl) != (ssize_t)kl || close(p[1]) != 0) {
			fprintf(stderr, PROG " store passphrase: pipe: %s\n", strerror(errno));
			close(p[0]);
			return 1;
		}
		pfmt(newkey, sizeof newkey, "/proc/self/fd/%d", p[0]); /* a live root may lack /dev/fd */
		if (vals[1]) {
			cmd[n++] = "--key-file";
			cmd[n++] = vals[1];
		}
		cmd[n++] = dev;
		cmd[n++] = newkey;
		cmd[n] = NULL;
		printf("passphrase: adding a recovery key to %s (LUKS2) with cryptsetup luksAddKey; "
		       "the current passphrase opens the way\n",
		       dev);
		r = store_run(cmd, -1);
		close(p[0]);
	}
	if (r != 0) {
		memset(key, 0, sizeof key);
		fprintf(stderr, PROG " store passphrase: cryptsetup luksAddKey %s failed (exit %d): no key was added\n",
			dev, r);
		return 1;
	}
	printf("recovery key: %s\n"
	       "Write it down and keep it away from the stick: typed at the boot prompt (with the dashes), it opens "
	       "the store as the passphrase does. It is not stored anywhere else.\n",
	       key);
	memset(key, 0, sizeof key);
	return 0;
}

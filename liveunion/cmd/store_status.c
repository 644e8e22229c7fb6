/* store_status.c - `liveunion store status`: size, free space, format, last image, encryption, and what fills
 * the store (its biggest entries). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

/* a path under the store's directory: room for it (no silent truncation) */
#define SUB_LEN (PATH_MAX + 512)

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

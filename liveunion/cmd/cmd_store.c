/* cmd_store.c - `liveunion store`: the persistence store's own tools. This file: the subcommand table, the options
 * they share, reset; store_status.c reports, store_passphrase.c changes the LUKS2 passphrase, store_copy.c backs up
 * and restores, store_grow.c grows. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

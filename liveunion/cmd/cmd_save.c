/* cmd_save.c - `liveunion save NAME`: the upper of the running system (or any upper directory) as a
 * new squashfs layer NN-NAME.squashfs, by default into the persistence store's liveunion-v1/layers/,
 * where the init stacks it above the medium's layers at the next boot. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "tool.h"

#define UPPER LIVE_RUN "/" LIVE_UPPER "/" STORE_UPPER
#define STORE LIVE_RUN "/" LIVE_STORE
#define SAVED_LAYERS STORE_VDIR "/" STORE_LAYERS
#define NAME_MAX_LEN 40
/* A first saved layer goes above 10-base, the usual bottom layer, with room below it. */
#define NN_FIRST 20
#define OVERLAY_MAGIC 0x794c7630
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
	interrupted = sig;
}

static int usage(FILE *f, int rc)
{
	fprintf(f,
		"usage: " PROG " save NAME [--to DIR] [--upper DIR]\n"
		"Write the changes of this session (the overlay upper " UPPER ") as the layer NN-NAME.squashfs.\n"
		"NAME: 1 to %d of a-z 0-9 _ -. NN: one above the highest layer number in use.\n"
		"  (default)    into the persistence store: " STORE "/" SAVED_LAYERS "/ (mounted read-write);\n"
		"               the next boot from the same stick stacks it on top of the medium's layers\n"
		"  --to DIR     into DIR instead (a stick, /tmp, ...)\n"
		"  --upper DIR  save DIR instead of the running system's upper (offline, on a build host)\n",
		NAME_MAX_LEN);
	return rc;
}

static int name_ok(const char *n)
{
	size_t len = strlen(n);

	if (len < 1 || len > NAME_MAX_LEN)
		return 0;
	for (; *n; n++)
		if (!(islower((unsigned char)*n) || isdigit((unsigned char)*n) || *n == '_' || *n == '-'))
			return 0;
	return 1;
}

/* NN of "NN-rest", else -1; *rest points after the dash. */
static int nn_of(const char *e, const char **rest)
{
	*rest = e + 3;
	return layer_nn(e);
}

/* Whether rest is NAME, or NAME.squashfs. */
static int rest_is(const char *rest, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(rest, name, n) && (!rest[n] || !strcmp(rest + n, LAYER_SUFFIX));
}

/* Highest NN in dir (into *max) and whether a layer NAME is there (*clash gets the entry). A missing
 * directory counts as empty; -1 only when it cannot be read. */
static int scan(const char *dir, const char *name, int *max, char *clash, size_t clen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	const char *rest;
	int nn;

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d)) != NULL) {
		if ((nn = nn_of(e->d_name, &rest)) < 0)
			continue;
		if (nn > *max)
			*max = nn;
		if (rest_is(rest, name) && !clash[0])
			snprintf(clash, clen, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	return 0;
}

/* The layers the running system left out (live.layers=-x) keep their numbers too. */
static void scan_plan_excluded(const char *name, int *max, char *clash, size_t clen)
{
	char line[4096], *tok, *save;
	const char *rest;
	FILE *f = fopen(LIVE_RUN "/" LIVE_PLAN, "r");
	const size_t klen = strlen(PLAN_LAYERS_EXCLUDED "=");
	int nn;

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, PLAN_LAYERS_EXCLUDED "=", klen))
			continue;
		line[strcspn(line, "\n")] = '\0';
		for (tok = strtok_r(line + klen, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if ((nn = nn_of(tok, &rest)) < 0)
				continue;
			if (nn > *max)
				*max = nn;
			if (rest_is(rest, name) && !clash[0])
				snprintf(clash, clen, "%s (left out by live.layers=)", tok);
		}
	}
	fclose(f);
}

/* The default destination: the store's layer directory, when a store is mounted read-write. */
static int store_dest(char *dest, size_t len)
{
	struct stat st, run;
	struct statvfs vfs;

	if (stat(STORE, &st) != 0 || stat(LIVE_RUN, &run) != 0 || st.st_dev == run.st_dev) {
		fprintf(stderr,
			PROG " save: no persistence store is mounted at " STORE " (looked for " STORE "/" SAVED_LAYERS
			     "/): this boot has none.\n"
			     "  Use --to DIR to write the layer somewhere else (a stick, or /tmp to copy it later).\n");
		return -1;
	}
	if (statvfs(STORE, &vfs) != 0 || (vfs.f_flag & ST_RDONLY)) {
		fprintf(stderr,
			PROG " save: the persistence store at " STORE " is mounted read-only (live.persist=off or "
			     "live.persist.ro): nothing is written to it.\n"
			     "  Use --to DIR to write the layer somewhere else, or boot with persistence.\n");
		return -1;
	}
	snprintf(dest, len, "%s/%s", STORE, SAVED_LAYERS);
	if (mkdir(dest, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, PROG " save: mkdir %s: %s\n", dest, strerror(errno));
		return -1;
	}
	return 0;
}

/* mksquashfs reads the upper directly: when the output file is written through the overlay, it also
 * appears in the upper and must not go into the layer. The path, relative to the upper, or "". */
static void self_exclude(const char *upper, const char *dest, const char *tmpname, char *rel, size_t len)
{
	char ru[PATH_MAX], rd[PATH_MAX];
	struct statfs fs;
	size_t n;

	rel[0] = '\0';
	if (!realpath(upper, ru) || !realpath(dest, rd))
		return;
	n = strlen(ru);
	if (!strncmp(rd, ru, n) && (rd[n] == '/' || !rd[n]))
		snprintf(rel, len, "%s%s%s", rd[n] ? rd + n + 1 : "", rd[n] ? "/" : "", tmpname);
	else if (!strcmp(upper, UPPER) && statfs(dest, &fs) == 0 && (unsigned long)fs.f_type == OVERLAY_MAGIC)
		snprintf(rel, len, "%s%s%s", rd + 1, rd[1] ? "/" : "", tmpname);
}

static int run_mksquashfs(const char *upper, const char *tmp, const char *exclude)
{
	/* the option pairs kept together (clang-format would lay them out in columns) */
	/* clang-format off */
	const char *argv[] = {"mksquashfs", upper, tmp, "-noappend", "-comp", "zstd", "-xattrs", "-no-progress",
			      "-quiet", exclude[0] ? "-e" : NULL, exclude, NULL};
	/* clang-format on */
	int st;
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, PROG " save: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, PROG " save: cannot run mksquashfs: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, PROG " save: waitpid mksquashfs: %s\n", strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !interrupted)
		return 0;
	if (WIFSIGNALED(st) || interrupted)
		fprintf(stderr, PROG " save: mksquashfs was stopped (%s)\n",
			strsignal(interrupted ? interrupted : WTERMSIG(st)));
	else if (WEXITSTATUS(st) != 127)
		fprintf(stderr, PROG " save: mksquashfs %s %s failed (exit %d)\n", upper, tmp, WEXITSTATUS(st));
	return -1;
}

static int fsync_path(const char *path, int flags, long long *size)
{
	struct stat st;
	int fd = open(path, flags | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	if (rc == 0 && size)
		rc = fstat(fd, &st) == 0 ? (*size = st.st_size, 0) : -1;
	if (close(fd) != 0)
		rc = -1;
	return rc;
}

/* rename that never replaces: a layer of that name that appeared meanwhile is user data. */
static int rename_noreplace(const char *from, const char *to)
{
	struct stat st;

	if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* file systems without RENAME_NOREPLACE (vfat on old kernels): check, then rename */
	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

/* 1 for a directory; else 0 with errno saying why. */
static int is_dir(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return 0;
	}
	return 1;
}

int cmd_save(int argc, char **argv)
{
	const char *name = NULL, *to = NULL, *upper = UPPER;
	char dest[PATH_MAX], clash[PATH_MAX + 64] = "", tmpname[96];
	char tmp[PATH_MAX + 100], final[PATH_MAX + 100], exclude[PATH_MAX + 100];
	struct sigaction sa;
	long long size = 0;
	int max = -1, nn, fd, ufd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(stdout, 0);
		if (!strcmp(argv[i], "--to") && i + 1 < argc)
			to = argv[++i];
		else if (!strcmp(argv[i], "--upper") && i + 1 < argc)
			upper = argv[++i];
		else if (argv[i][0] == '-' || name)
			return usage(stderr, 2);
		else
			name = argv[i];
	}
	if (!name)
		return usage(stderr, 2);
	if (!name_ok(name)) {
		fprintf(stderr, PROG " save: '%s' is not a layer name: use 1 to %d of a-z, 0-9, _ and -\n", name,
			NAME_MAX_LEN);
		return 2;
	}
	if (!is_dir(upper)) {
		fprintf(stderr, PROG " save: the upper %s: %s\n", upper, strerror(errno));
		if (!strcmp(upper, UPPER))
			fprintf(stderr, "  (not a live system? --upper DIR names an upper directory)\n");
		return 1;
	}
	if (to) {
		if (!is_dir(to)) {
			fprintf(stderr, PROG " save: --to %s: %s\n", to, strerror(errno));
			return 1;
		}
		snprintf(dest, sizeof dest, "%s", to);
	} else if (store_dest(dest, sizeof dest) != 0) {
		return 1;
	}
	if (scan(LIVE_RUN "/" LIVE_LAYERS, name, &max, clash, sizeof clash) != 0) {
		fprintf(stderr, PROG " save: read " LIVE_RUN "/" LIVE_LAYERS ": %s\n", strerror(errno));
		return 1;
	}
	if (scan(dest, name, &max, clash, sizeof clash) != 0) {
		fprintf(stderr, PROG " save: read %s: %s\n", dest, strerror(errno));
		return 1;
	}
	scan_plan_excluded(name, &max, clash, sizeof clash);
	if (clash[0]) {
		fprintf(stderr,
			PROG " save: a layer called %s already exists: %s; choose another name (nothing is "
			     "ever overwritten)\n",
			name, clash);
		return 1;
	}
	nn = max < 0 ? NN_FIRST : max + 1;
	if (nn > LAYER_NN_MAX) {
		fprintf(stderr,
			PROG " save: no layer number left: %d is in use (in " LIVE_RUN "/" LIVE_LAYERS " or %s); "
			     "merge layers with '" PROG " flatten' first\n",
			LAYER_NN_MAX, dest);
		return 1;
	}
	snprintf(final, sizeof final, "%s/%02d-%s" LAYER_SUFFIX, dest, nn, name);
	snprintf(tmpname, sizeof tmpname, ".%02d-%s" LAYER_SUFFIX ".tmp-%ld", nn, name, (long)getpid());
	snprintf(tmp, sizeof tmp, "%s/%s", dest, tmpname);
	self_exclude(upper, dest, tmpname, exclude, sizeof exclude);

	/* The upper as the kernel has it, not pages still in flight (a store's upper is a real disk). */
	if ((ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || syncfs(ufd) != 0) {
		fprintf(stderr, PROG " save: sync %s: %s\n", upper, strerror(errno));
		if (ufd >= 0)
			close(ufd);
		return 1;
	}
	close(ufd);
	/* Reserve the temporary name (and learn now whether DIR is writable); from here on, every failure
	 * removes it, also Ctrl-C. */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, PROG " save: create %s: %s\n", tmp, strerror(errno));
		return 1;
	}
	close(fd);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	printf("saving %s as %s ...\n", upper, final);
	fflush(stdout);
	if (run_mksquashfs(upper, tmp, exclude) != 0)
		goto fail;
	if (fsync_path(tmp, O_RDONLY, &size) != 0) {
		fprintf(stderr, PROG " save: fsync %s: %s\n", tmp, strerror(errno));
		goto fail;
	}
	if (rename_noreplace(tmp, final) != 0) {
		fprintf(stderr, PROG " save: rename %s to %s: %s\n", tmp, final, strerror(errno));
		goto fail;
	}
	if (fsync_path(dest, O_RDONLY | O_DIRECTORY, NULL) != 0) {
		/* the file is complete; only its name may not survive a power cut yet */
		fprintf(stderr, PROG " save: fsync the directory %s: %s (run sync before switching off)\n", dest,
			strerror(errno));
	}
	if (size < 1048576)
		printf("saved %02d-%s: %s (%lld bytes, %lld KiB)\n", nn, name, final, size, (size + 1023) / 1024);
	else
		printf("saved %02d-%s: %s (%lld bytes, %.1f MiB)\n", nn, name, final, size, size / 1048576.0);
	if (!to)
		printf("The next boot from this stick stacks it on top of the medium's layers as %02d-%s (also with "
		       "live.persist=off);\nlive.layers=-%s leaves it out. Your changes also stay in the store's upper: "
		       "live.persist.reset\nstarts an empty upper on top of the saved layer.\n",
		       nn, name, name);
	else
		printf("To use it: copy it into " SAVED_LAYERS "/ of a persistence store (the next boot from that "
		       "stick\nstacks it on top of the medium's layers), or put it into live/ of an ISO on the build "
		       "host with\n./build.sh iso-with OUTPUT.iso %02d-%s" LAYER_SUFFIX "\n",
		       nn, name);
	return fflush(stdout) == 0 ? 0 : 1;
fail:
	if (unlink(tmp) != 0 && errno != ENOENT)
		fprintf(stderr, PROG " save: could not remove %s: %s\n", tmp, strerror(errno));
	fprintf(stderr, PROG " save: nothing saved\n");
	return 1;
}

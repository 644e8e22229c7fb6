/* cmd_save.c - `liveunion save NAME`: the upper of the running system (or any upper directory) as a
 * new squashfs layer NN-NAME.squashfs, by default into the persistence store's liveunion-v1/layers/,
 * where the init stacks it above the medium's layers at the next boot. This file: the name, the number, the
 * destination; save_write.c writes the layer. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "save.h"
#include "tool.h"

#define UPPER LIVE_RUN "/" LIVE_UPPER "/" STORE_UPPER
#define STORE LIVE_RUN "/" LIVE_STORE
#define SAVED_LAYERS STORE_VDIR "/" STORE_LAYERS
#define NAME_MAX_LEN 40
/* A first saved layer goes above 10-base, the usual bottom layer, with room below it. */
#define NN_FIRST 20
#define OVERLAY_MAGIC 0x794c7630

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

/* The number the new layer gets: one above every layer on the medium, in the store (or --to's dest) and left out
 * by the plan, none of them already called name. 0 with *nn, or 1 said. */
static int save_number(const char *name, const char *dest, int *nn)
{
	char clash[PATH_MAX + 64] = "";
	int max = -1;

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
	*nn = max < 0 ? NN_FIRST : max + 1;
	if (*nn > LAYER_NN_MAX) {
		fprintf(stderr,
			PROG " save: no layer number left: %d is in use (in " LIVE_RUN "/" LIVE_LAYERS " or %s); "
			     "merge layers with '" PROG " flatten' first\n",
			LAYER_NN_MAX, dest);
		return 1;
	}
	return 0;
}

int cmd_save(int argc, char **argv)
{
	const char *name = NULL, *to = NULL, *upper = UPPER;
	char dest[PATH_MAX], tmpname[96];
	char tmp[PATH_MAX + 100], final[PATH_MAX + 100], exclude[PATH_MAX + 100];
	long long size = 0;
	int nn;

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
	if (save_number(name, dest, &nn) != 0)
		return 1;
	snprintf(final, sizeof final, "%s/%02d-%s" LAYER_SUFFIX, dest, nn, name);
	snprintf(tmpname, sizeof tmpname, ".%02d-%s" LAYER_SUFFIX ".tmp-%ld", nn, name, (long)getpid());
	snprintf(tmp, sizeof tmp, "%s/%s", dest, tmpname);
	self_exclude(upper, dest, tmpname, exclude, sizeof exclude);
	if (save_write(upper, dest, tmp, final, exclude, &size) != 0)
		return 1;
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
}

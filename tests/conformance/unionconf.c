/*
 * unionconf: the union root conformance suite (runs in the live system, or on the host against a test overlay).
 *   unionconf [--root DIR] [--fixtures DIR] [--lower DIR] [--upper DIR] [--only CHECK,...] [--skip CHECK,...] [-v]
 *   unionconf --make-fixtures DIR [--epoch SECONDS]     (build host: writes the lower-layer fixture tree)
 * CHECK is a check name or a prefix ending at a dot ("copyup" selects every copyup.* check).
 * Prints `ok NAME`, `FAIL NAME: why` or `known-limit NAME: what` per check, then `N passed, N failed`.
 */
#include "unionconf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct uc uc;
static int n_pass, n_fail, n_known;

static int in_list(const char *list, const char *name)
{
	size_t n;

	while (list && *list) {
		n = strcspn(list, ",");
		if (n && strncmp(name, list, n) == 0 && (name[n] == '\0' || name[n] == '.'))
			return 1;
		list += n;
		list += *list == ',';
	}
	return 0;
}

int want(const char *name)
{
	return (!uc.only || in_list(uc.only, name)) && !in_list(uc.skip, name);
}

/* An area runs when no --only is given or one of its checks is selected, and it is not skipped as a whole. */
int want_area(const char *area)
{
	const char *l = uc.only;
	size_t n, a = strlen(area);

	if (in_list(uc.skip, area))
		return 0;
	if (!l)
		return 1;
	while (*l) {
		n = strcspn(l, ",");
		if (n >= a && strncmp(l, area, a) == 0 && (n == a || l[a] == '.'))
			return 1;
		l += n;
		l += *l == ',';
	}
	return 0;
}

void ok(const char *name)
{
	printf("ok %s\n", name);
	n_pass++;
}

void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	n_fail++;
}

void known_limit(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("known-limit %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	n_known++;
}

void note(const char *fmt, ...)
{
	va_list ap;

	if (!uc.verbose)
		return;
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *s = malloc(n);

	if (!s) {
		perror("unionconf: malloc");
		exit(2);
	}
	snprintf(s, n, "%s%s%s", a, strcmp(a, "/") && *b ? "/" : "", b);
	return s;
}

static int is_dir(const char *p)
{
	struct stat st;

	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The live system's own layout: the test layer is 90-conformance, the upper is /run/live/upper/upper. */
static void guess_layers(void)
{
	char *p;

	if (!uc.lower) {
		p = join(uc.root, "run/live/layers/90-conformance/srv/unionconf");
		if (is_dir(p))
			uc.lower = p;
		else
			free(p);
	}
	if (!uc.upper) {
		p = join(uc.root, "run/live/upper/upper");
		if (is_dir(p))
			uc.upper = join(p, "srv/unionconf");
		free(p);
	}
}

static long long read_epoch(void)
{
	char buf[32];
	size_t len;

	if (read_all(fx("epoch"), buf, sizeof(buf) - 1, &len) != 0)
		return -1;
	buf[len] = '\0';
	return strtoll(buf, NULL, 10);
}

static void usage(void)
{
	fputs("usage: unionconf [--root DIR] [--fixtures DIR] [--lower DIR] [--upper DIR] [--only CHECK,...]\n"
	      "                 [--skip CHECK,...] [-v]\n"
	      "       unionconf --make-fixtures DIR [--epoch SECONDS]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *make = NULL, *fixdir = NULL;
	long long epoch = 0;
	int i;

	uc.root = "/";
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "-v") == 0) {
			uc.verbose = 1;
			continue;
		}
		if (!v)
			usage();
		if (strcmp(a, "--root") == 0)
			uc.root = v;
		else if (strcmp(a, "--fixtures") == 0)
			fixdir = v;
		else if (strcmp(a, "--lower") == 0)
			uc.lower = v;
		else if (strcmp(a, "--upper") == 0)
			uc.upper = v;
		else if (strcmp(a, "--only") == 0)
			uc.only = v;
		else if (strcmp(a, "--skip") == 0)
			uc.skip = v;
		else if (strcmp(a, "--make-fixtures") == 0)
			make = v;
		else if (strcmp(a, "--epoch") == 0)
			epoch = strtoll(v, NULL, 10);
		else
			usage();
		i++;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(0);
	if (make)
		return make_fixtures(make, epoch) == 0 ? 0 : 1;

	uc.fix = fixdir ? fixdir : join(uc.root, "srv/unionconf");
	if (!is_dir(uc.fix)) {
		fail("setup", "fixtures directory %s: %s (is the 90-conformance layer stacked?)", uc.fix, strerror(errno));
		printf("%d passed, %d failed\n", n_pass, n_fail);
		return 1;
	}
	guess_layers();
	uc.epoch = read_epoch();
	if (uc.epoch < 0) {
		fail("setup", "cannot read %s/epoch: %s", uc.fix, strerror(errno));
		printf("%d passed, %d failed\n", n_pass, n_fail);
		return 1;
	}
	printf("# union mount options: %s\n", *mount_opts() ? mount_opts() : "(not found in /proc/self/mounts)");
	note("root %s, fixtures %s, lower %s, upper %s", uc.root, uc.fix, uc.lower ? uc.lower : "(unknown)",
	     uc.upper ? uc.upper : "(unknown)");

	check_copyup();
	check_links();
	check_whiteout();
	check_readdir();
	check_misc();
	check_no_whiteout_visible();

	if (n_known)
		printf("# %d known limit(s), overlayfs limits documented in docs/tests.md, not counted as failures\n", n_known);
	printf("%d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}

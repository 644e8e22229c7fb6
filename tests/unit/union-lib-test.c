/* union-lib-test.c - unit tests of the liveunion union reader (run as root: it
 * makes 0/0 whiteouts and trusted.* xattrs). usage: union-lib-test TMPDIR */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "union.h"
#ifdef __SANITIZE_ADDRESS__
/* from ASan's runtime (gcc ships no header for it) */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

static int passed, failed;
static char top[4096];

#define CHECK(cond, ...)                                                     \
	do {                                                                 \
		if (cond)                                                    \
			passed++;                                            \
		else {                                                       \
			failed++;                                            \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
		}                                                            \
	} while (0)

static const char *P(const char *rel)
{
	static char b[8][4096];
	static int k;
	k = (k + 1) % 8;
	snprintf(b[k], sizeof b[k], "%s/%s", top, rel);
	return b[k];
}

static void mk(const char *rel)
{
	if (mkdir(P(rel), 0755) < 0 && errno != EEXIST)
		perror(rel);
}
static void put(const char *rel, const char *s)
{
	FILE *f = fopen(P(rel), "w");
	if (!f || fputs(s, f) < 0 || fclose(f) != 0)
		perror(rel);
}
static void xa(const char *rel, const char *name, const char *v)
{
	if (lsetxattr(P(rel), name, v, strlen(v), 0) < 0)
		perror(name);
}
static void wh(const char *rel)
{
	if (mknod(P(rel), S_IFCHR, makedev(0, 0)) < 0)
		perror(rel);
}

static struct lu_union *stack(int n, unsigned ns)
{
	char *l[3] = {(char *)P("l0"), (char *)P("l1"), (char *)P("l2")};
	char err[256];
	struct lu_opts o = {ns, 0};
	struct lu_union *u = lu_open(l, n, &o, err, sizeof err);
	if (!u)
		fprintf(stderr, "lu_open: %s\n", err);
	return u;
}

static int has(struct lu_union *u, const char *dir, const char *name)
{
	struct lu_dir *d = lu_opendir(u, dir);
	const struct lu_dirent *e;
	int found = 0;
	if (!d)
		return -1;
	while ((e = lu_readdir(d)))
		found += !strcmp(e->name, name);
	lu_closedir(d);
	return found;
}

static void content_is(struct lu_union *u, const char *path, const char *want)
{
	struct lu_node n;
	char buf[256] = "";
	int fd;
	ssize_t r = -1;
	if (lu_lookup(u, path, &n) == 0) {
		if ((fd = lu_open_node(u, &n)) >= 0) {
			r = read(fd, buf, sizeof buf - 1);
			close(fd);
		}
		lu_node_free(&n);
	}
	buf[r > 0 ? r : 0] = '\0';
	CHECK(!strcmp(buf, want), "%s holds '%s', want '%s'", path, buf, want);
}

static void test_parse(void)
{
	char out[32];
	CHECK(lu_parse_redirect("/a/b", 4, out, sizeof out) == 1 && !strcmp(out, "/a/b"), "absolute redirect");
	CHECK(lu_parse_redirect("x", 1, out, sizeof out) == 0, "relative redirect");
	CHECK(lu_parse_redirect("a/b", 3, out, sizeof out) == -1, "relative with slash refused");
	CHECK(lu_parse_redirect("//x", 3, out, sizeof out) == -1, "empty component refused");
	CHECK(lu_parse_redirect("/a/", 3, out, sizeof out) == -1, "trailing slash refused");
	CHECK(lu_parse_redirect("", 0, out, sizeof out) == -1, "empty refused");
	CHECK(lu_parse_redirect("/abcdefghijklmnopqrstuvwxyz0123456789", 37, out, sizeof out) == -1,
	      "too long refused");
	CHECK(lu_parse_opaque("y", 1) == LU_OPAQUE_Y && lu_parse_opaque("x", 1) == LU_OPAQUE_X &&
		      lu_parse_opaque("yy", 2) == LU_OPAQUE_NONE && lu_parse_opaque("n", 1) == LU_OPAQUE_NONE,
	      "opaque values");
	CHECK(lu_xattr_is_private("trusted.overlay.opaque", 22, LU_NS_TRUSTED) &&
		      !lu_xattr_is_private("user.overlay.opaque", 19, LU_NS_TRUSTED) &&
		      lu_xattr_is_private("user.overlay.opaque", 19, LU_NS_USER) &&
		      !lu_xattr_is_private("user.other", 10, 0),
	      "private xattr names");
	size_t pos = 0;
	const char list[] = "a\0\0bb\0c"; /* unterminated tail "c" */
	const char *n1 = lu_xattr_list_next(list, 7, &pos), *n2 = lu_xattr_list_next(list, 7, &pos),
		   *n3 = lu_xattr_list_next(list, 7, &pos);
	CHECK(n1 && !strcmp(n1, "a") && n2 && !strcmp(n2, "bb") && !n3, "xattr list walk");
}

static void test_rules(void)
{
	struct lu_union *u;
	struct stat st;

	mk("l0");
	mk("l1");
	mk("l2");
	mk("l0/d");
	mk("l1/d");
	mk("l2/d");
	put("l0/d/top", "0");
	put("l1/d/top", "1");
	put("l2/d/mid", "2");
	put("l1/d/mid", "1");
	put("l2/d/gone", "2");
	wh("l1/d/gone");
	mk("l0/x");
	xa("l0/x", "trusted.overlay.opaque", "x");
	put("l0/x/xgone", "");
	xa("l0/x/xgone", "trusted.overlay.whiteout", "");
	mk("l1/x");
	put("l1/x/xgone", "1");
	put("l1/x/keep", "1");
	mk("l0/op");
	xa("l0/op", "trusted.overlay.opaque", "y");
	put("l0/op/mine", "0");
	mk("l1/op");
	put("l1/op/hidden", "1");
	put("l0/file", "file");
	mk("l1/file");
	put("l1/file/under", "u");
	mk("l0/new");
	xa("l0/new", "trusted.overlay.redirect", "/old");
	mk("l1/old");
	put("l1/old/f", "moved");
	mk("l0/rel");
	xa("l0/rel", "trusted.overlay.redirect", "orig");
	mk("l2/orig");
	put("l2/orig/g", "rel");
	mk("l0/uo");
	xa("l0/uo", "user.overlay.opaque", "y");
	mk("l1/uo");
	put("l1/uo/seen", "1");
	if (!(u = stack(3, LU_NS_TRUSTED)))
		return;
	content_is(u, "/d/top", "0");
	content_is(u, "d/mid", "1");
	CHECK(lu_stat(u, "/d/gone", &st) == -ENOENT, "0/0 whiteout hides the lower file");
	CHECK(has(u, "/d", "gone") == 0 && has(u, "/d", "top") == 1, "whiteout never listed, names once");
	CHECK(lu_stat(u, "/x/xgone", &st) == -ENOENT && has(u, "/x", "xgone") == 0, "xattr whiteout hides");
	CHECK(has(u, "/x", "keep") == 1, "opaque=x directory still merges");
	CHECK(has(u, "/op", "mine") == 1 && has(u, "/op", "hidden") == 0 && lu_stat(u, "/op/hidden", &st) == -ENOENT,
	      "opaque directory hides everything below");
	CHECK(lu_stat(u, "/file", &st) == 0 && S_ISREG(st.st_mode) && lu_stat(u, "/file/under", &st) == -ENOTDIR,
	      "a non-directory hides the directory below");
	content_is(u, "/new/f", "moved");
	content_is(u, "/rel/g", "rel");
	CHECK(has(u, "/uo", "seen") == 1, "user.overlay.opaque ignored in trusted mode");
	lu_close(u);
	if ((u = stack(3, LU_NS_USER))) {
		CHECK(has(u, "/uo", "seen") == 0, "user.overlay.opaque honoured with userxattr");
		CHECK(has(u, "/op", "hidden") == 1, "trusted.overlay.opaque ignored with userxattr");
		lu_close(u);
	}
}

static void test_cookies_and_changes(void)
{
	struct lu_union *u;
	struct lu_dir *d;
	const struct lu_dirent *e;
	char name[64], first[64][64], again[64][64];
	long cookie = -1;
	int n = 0, m = 0, i;

	mk("l0/c");
	mk("l1/c");
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "%s/c/n%02d", i % 2 ? "l0" : "l1", i);
		put(name, "x");
	}
	put("l0/c/n03dup", "x");
	put("l1/c/n03dup", "y");
	if (!(u = stack(2, 0)) || !(d = lu_opendir(u, "/c")))
		return;
	CHECK(lu_dir_count(d) == 41, "merged count 41, got %zu", lu_dir_count(d));
	while ((e = lu_readdir(d)) && n < 64) {
		if (n == 10)
			cookie = lu_telldir(d) - 1; /* cookie of the entry just read */
		snprintf(first[n++], 64, "%s", e->name);
	}
	CHECK(n == 41 && errno == 0, "41 entries, clean end (n=%d errno=%d)", n, errno);
	lu_rewinddir(d);
	e = lu_readdir(d);
	CHECK(e && !strcmp(e->name, first[0]), "rewinddir starts over");
	lu_seekdir(d, cookie + 1);
	while ((e = lu_readdir(d)) && m < 64)
		snprintf(again[m++], 64, "%s", e->name);
	CHECK(m == 30 && !strcmp(again[0], first[11]) && !strcmp(again[m - 1], first[40]),
	      "seekdir to a cookie resumes at the same entry after rewinddir (m=%d)", m);
	put("l1/c/late", "z"); /* a change in a lower layer while the stream is open */
	lu_seekdir(d, 0);
	n = 0;
	while ((e = lu_readdir(d)))
		n++;
	CHECK(errno == ESTALE && lu_dir_changed(d) && n == 41,
	      "change reported as ESTALE, listing not mixed (n=%d errno=%d)", n, errno);
	lu_closedir(d);
	CHECK(has(u, "/c", "late") == 1, "a new stream sees the change");
	lu_close(u);
}

/* Read the whole stream of DIR; CHANGE (once, after AFTER entries) alters a layer.
 * Returns the entries read, *ERR the errno at the end, *SAW if NAME was returned. */
static int read_all(struct lu_dir *d, int after, void (*change)(void), const char *name, int *err, int *saw)
{
	const struct lu_dirent *e;
	int n = 0;

	*saw = 0;
	while ((e = lu_readdir(d))) {
		*saw |= name && !strcmp(e->name, name);
		if (++n == after && change)
			change();
	}
	*err = errno;
	return n;
}

static void ch_big(void)
{
	put("l1/big/late", "z");
}
static void ch_newdir(void)
{
	mk("l1/w");
	put("l1/w/c", "c");
}
static void ch_unwhite(void)
{
	if (unlink(P("l1/s")) < 0)
		perror("unlink");
}
static void ch_replace(void)
{
	if (rename(P("l1/r"), P("l1/r.old")) < 0)
		perror("rename");
	mk("l1/r");
	put("l1/r/b", "2"); /* same names as before: only the directory is another */
}
static void ch_opaque(void)
{
	xa("l0/o", "trusted.overlay.opaque", "y");
}
static void ch_elsewhere(void)
{
	put("l1/other/new", "n");
	put("l0/w/../other2", "n");
}

static void expect_stale(const char *dir, int after, void (*change)(void), const char *what)
{
	struct lu_union *u = stack(3, LU_NS_TRUSTED);
	struct lu_dir *d;
	int n, err, saw;

	if (!u || !(d = lu_opendir(u, dir))) {
		CHECK(0, "%s: open %s", what, dir);
		lu_close(u);
		return;
	}
	n = read_all(d, after, change, NULL, &err, &saw);
	CHECK(err == ESTALE && lu_dir_changed(d), "%s: reported as ESTALE (errno %d, %d entries)", what, err, n);
	lu_closedir(d);
	lu_close(u);
}

static void test_changes_in_layers(void)
{
	struct lu_union *u;
	struct lu_dir *d;
	const struct lu_dirent *e;
	char name[64], at[64] = "";
	int i, n, err, saw;
	long cookie = -1;

	/* mid-stream: 10,000 entries, a lower layer changes after 100 of them */
	mk("l0/big");
	mk("l1/big");
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof name, "l%d/big/e%05d", i % 2, i);
		put(name, "");
	}
	if ((u = stack(2, 0)) && (d = lu_opendir(u, "/big"))) {
		n = read_all(d, 100, ch_big, "late", &err, &saw);
		CHECK(err == ESTALE && n < 10000 && !saw,
		      "change while reading: ESTALE before the end, never mixed (n=%d errno=%d)", n, err);
		lu_closedir(d);
	}
	lu_close(u);
	/* a layer that had no directory there gets one */
	mk("l0/w");
	put("l0/w/a", "a");
	mk("l2/w");
	put("l2/w/b", "b");
	expect_stale("/w", 1, ch_newdir, "directory appears in a layer that did not contribute");
	/* the whiteout that stopped the merge goes */
	mk("l0/s");
	put("l0/s/a", "a");
	wh("l1/s");
	mk("l2/s");
	put("l2/s/b", "b");
	expect_stale("/s", 1, ch_unwhite, "whiteout below a directory removed");
	/* a contributing directory renamed away and another put in its place */
	mk("l0/r");
	put("l0/r/a", "a");
	mk("l1/r");
	put("l1/r/b", "b");
	expect_stale("/r", 1, ch_replace, "contributing directory replaced");
	/* an overlay xattr set on a contributing directory */
	mk("l0/o");
	put("l0/o/a", "a");
	mk("l1/o");
	put("l1/o/b", "b");
	expect_stale("/o", 1, ch_opaque, "contributing directory made opaque");
	/* no false alarm: changes in directories that play no part */
	mk("l1/other");
	if ((u = stack(3, LU_NS_TRUSTED)) && (d = lu_opendir(u, "/w"))) {
		n = read_all(d, 1, ch_elsewhere, NULL, &err, &saw);
		CHECK(err == 0 && !lu_dir_changed(d) && n == 3, "unrelated change not reported (n=%d errno=%d)", n,
		      err);
		lu_closedir(d);
	}
	lu_close(u);
	/* cookies stay valid for the life of the stream, across a reported change */
	if ((u = stack(2, 0)) && (d = lu_opendir(u, "/big"))) {
		for (i = 0; (e = lu_readdir(d)); i++)
			if (i == 7777) {
				cookie = lu_telldir(d) - 1;
				snprintf(at, sizeof at, "%s", e->name);
			}
		put("l0/big/later", "z");
		lu_rewinddir(d);
		while (lu_readdir(d))
			;
		CHECK(errno == ESTALE, "second change reported (errno %d)", errno);
		lu_seekdir(d, cookie);
		e = lu_readdir(d);
		CHECK(e && !strcmp(e->name, at), "cookie still names the same entry after a change");
		lu_closedir(d);
	}
	lu_close(u);
}

static void test_memory(void)
{
#ifdef __SANITIZE_ADDRESS__
	struct lu_union *u;
	struct lu_dir *d;
	size_t base, small1 = 0, small2 = 0, big = 0;
	char name[64];
	int i;

	mk("l0/m");
	mk("l0/m/small");
	mk("l1/m");
	mk("l1/m/huge");
	mk("l1/m/small");
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof name, "l%d/m/small/s%d", i % 2, i);
		put(name, "");
	}
	if ((u = stack(2, 0))) {
		base = __sanitizer_get_current_allocated_bytes();
		if ((d = lu_opendir(u, "/m/small"))) {
			small1 = __sanitizer_get_current_allocated_bytes() - base;
			lu_closedir(d);
		}
		lu_close(u);
	}
	for (i = 0; i < 20000; i++) {
		snprintf(name, sizeof name, "l1/m/huge/h%05d", i);
		put(name, "");
	}
	if ((u = stack(2, 0))) {
		base = __sanitizer_get_current_allocated_bytes();
		if ((d = lu_opendir(u, "/m/small"))) {
			small2 = __sanitizer_get_current_allocated_bytes() - base;
			lu_closedir(d);
		}
		base = __sanitizer_get_current_allocated_bytes();
		if ((d = lu_opendir(u, "/m/huge"))) {
			big = __sanitizer_get_current_allocated_bytes() - base;
			lu_closedir(d);
		}
		lu_close(u);
	}
	printf("memory: 10-entry stream %zu bytes (%zu before a 20000-entry sibling), 20000-entry stream %zu bytes (%zu per entry)\n",
	       small2, small1, big, big / 20000);
	CHECK(small1 && small1 == small2 && small2 < 128 * 1024,
	      "a small directory's stream does not grow with the tree (%zu, then %zu bytes)", small1, small2);
	CHECK(big > small2 && big / 20000 < 128, "a stream costs under 128 bytes per entry (%zu)", big / 20000);
#endif
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TMPDIR\n", argv[0]);
		return 2;
	}
	snprintf(top, sizeof top, "%s", argv[1]);
	test_parse();
	test_rules();
	test_cookies_and_changes();
	test_changes_in_layers();
	test_memory();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

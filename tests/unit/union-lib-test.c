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

static int passed, failed;
static char top[4096];

#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
	fputc('\n', stderr); } } while (0)

static const char *P(const char *rel)
{
	static char b[8][4096];
	static int k;
	k = (k + 1) % 8;
	snprintf(b[k], sizeof b[k], "%s/%s", top, rel);
	return b[k];
}

static void mk(const char *rel) { if (mkdir(P(rel), 0755) < 0 && errno != EEXIST) perror(rel); }
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
static void wh(const char *rel) { if (mknod(P(rel), S_IFCHR, makedev(0, 0)) < 0) perror(rel); }

static struct lu_union *stack(int n, unsigned ns)
{
	char *l[3] = { (char *)P("l0"), (char *)P("l1"), (char *)P("l2") };
	char err[256];
	struct lu_opts o = { ns, 0 };
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
	CHECK(lu_parse_redirect("/abcdefghijklmnopqrstuvwxyz0123456789", 37, out, sizeof out) == -1, "too long refused");
	CHECK(lu_parse_opaque("y", 1) == LU_OPAQUE_Y && lu_parse_opaque("x", 1) == LU_OPAQUE_X &&
	      lu_parse_opaque("yy", 2) == LU_OPAQUE_NONE && lu_parse_opaque("n", 1) == LU_OPAQUE_NONE, "opaque values");
	CHECK(lu_xattr_is_private("trusted.overlay.opaque", 22, LU_NS_TRUSTED) &&
	      !lu_xattr_is_private("user.overlay.opaque", 19, LU_NS_TRUSTED) &&
	      lu_xattr_is_private("user.overlay.opaque", 19, LU_NS_USER) &&
	      !lu_xattr_is_private("user.other", 10, 0), "private xattr names");
	size_t pos = 0;
	const char list[] = "a\0\0bb\0c";   /* unterminated tail "c" */
	const char *n1 = lu_xattr_list_next(list, 7, &pos), *n2 = lu_xattr_list_next(list, 7, &pos),
		   *n3 = lu_xattr_list_next(list, 7, &pos);
	CHECK(n1 && !strcmp(n1, "a") && n2 && !strcmp(n2, "bb") && !n3, "xattr list walk");
}

static void test_rules(void)
{
	struct lu_union *u;
	struct stat st;

	mk("l0"); mk("l1"); mk("l2");
	mk("l0/d"); mk("l1/d"); mk("l2/d");
	put("l0/d/top", "0"); put("l1/d/top", "1"); put("l2/d/mid", "2"); put("l1/d/mid", "1");
	put("l2/d/gone", "2"); wh("l1/d/gone");
	mk("l0/x"); xa("l0/x", "trusted.overlay.opaque", "x"); put("l0/x/xgone", "");
	xa("l0/x/xgone", "trusted.overlay.whiteout", ""); mk("l1/x"); put("l1/x/xgone", "1"); put("l1/x/keep", "1");
	mk("l0/op"); xa("l0/op", "trusted.overlay.opaque", "y"); put("l0/op/mine", "0");
	mk("l1/op"); put("l1/op/hidden", "1");
	put("l0/file", "file"); mk("l1/file"); put("l1/file/under", "u");
	mk("l0/new"); xa("l0/new", "trusted.overlay.redirect", "/old"); mk("l1/old"); put("l1/old/f", "moved");
	mk("l0/rel"); xa("l0/rel", "trusted.overlay.redirect", "orig"); mk("l2/orig"); put("l2/orig/g", "rel");
	mk("l0/uo"); xa("l0/uo", "user.overlay.opaque", "y"); mk("l1/uo"); put("l1/uo/seen", "1");
	if (!(u = stack(3, LU_NS_TRUSTED)))
		return;
	content_is(u, "/d/top", "0");
	content_is(u, "d/mid", "1");
	CHECK(lu_stat(u, "/d/gone", &st) == -ENOENT, "0/0 whiteout hides the lower file");
	CHECK(has(u, "/d", "gone") == 0 && has(u, "/d", "top") == 1, "whiteout never listed, names once");
	CHECK(lu_stat(u, "/x/xgone", &st) == -ENOENT && has(u, "/x", "xgone") == 0, "xattr whiteout hides");
	CHECK(has(u, "/x", "keep") == 1, "opaque=x directory still merges");
	CHECK(has(u, "/op", "mine") == 1 && has(u, "/op", "hidden") == 0 &&
	      lu_stat(u, "/op/hidden", &st) == -ENOENT, "opaque directory hides everything below");
	CHECK(lu_stat(u, "/file", &st) == 0 && S_ISREG(st.st_mode) &&
	      lu_stat(u, "/file/under", &st) == -ENOTDIR, "a non-directory hides the directory below");
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

	mk("l0/c"); mk("l1/c");
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "%s/c/n%02d", i % 2 ? "l0" : "l1", i);
		put(name, "x");
	}
	put("l0/c/n03dup", "x"); put("l1/c/n03dup", "y");
	if (!(u = stack(2, 0)) || !(d = lu_opendir(u, "/c")))
		return;
	CHECK(lu_dir_count(d) == 41, "merged count 41, got %zu", lu_dir_count(d));
	while ((e = lu_readdir(d)) && n < 64) {
		if (n == 10)
			cookie = lu_telldir(d) - 1;   /* cookie of the entry just read */
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
	put("l1/c/late", "z");   /* a change in a lower layer while the stream is open */
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
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

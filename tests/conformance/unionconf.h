/* unionconf: checks that a union (overlayfs) root behaves like an ordinary writable filesystem. */
#ifndef UNIONCONF_H
#define UNIONCONF_H

#include <stddef.h>
#include <sys/types.h>

#define FIX_UID 1234
#define FIX_GID 5678
#define FIX_MODE 0640
#define FIX_SIZE 12411 /* three pages and a bit: copy-up must copy more than one chunk */
#define BIG_LOWER 10000
#define BIG_UPPER 10000
#define BIG_REMOVED 100 /* lower entries of big/ the suite removes (whiteouts mixed in) */

struct uc {
	const char *root;  /* the union mount under test */
	const char *fix;   /* fixtures directory inside it */
	const char *lower; /* same fixtures directory inside the lower layer, or NULL */
	const char *upper; /* same fixtures directory inside the upper layer, or NULL */
	const char *only, *skip;
	int verbose;
	long long epoch;   /* the fixtures' mtime, recorded by the fixture builder */
};

extern struct uc uc;

/* reporting: one line per check; known_limit() is only for limits documented in docs/tests.md */
int want(const char *name);
int want_area(const char *area);
void ok(const char *name);
void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void known_limit(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* helpers (util.c) */
const char *fx(const char *rel);                 /* fixtures path; rotating static buffers */
const char *in_layer(const char *layer, const char *rel);
void fix_content(const char *name, char *buf, size_t len);
int make_file(const char *path, const char *name, int with_xattrs);
int read_all(const char *path, char *buf, size_t cap, size_t *len);
const char *mount_opts(void);                  /* options of the union mount, "" if unknown */
int has_opt(const char *opt);                  /* opt ("index=on") is among them */
int area_fresh(const char *area);
/* More than one lower squashfs without a UUID of its own (a kernel without kernel/patches/0003): overlayfs then
 * cannot tell which layer an origin file handle belongs to and ignores origins, so st_ino of copied-up files is not
 * kept once the inode leaves the cache, and link() of a lower file gives the new name the upper st_ino. */
int lower_uuid_ambiguous(void);
#define AMBIGUOUS_UUID "more than one squashfs lower layer without a UUID (kernel without kernel/patches/0003): " \
		       "overlayfs does not follow copy-up origins"
int get_xattr(const char *path, const char *name, char *buf, size_t cap); /* length or -1 (errno) */
int same_content(const char *path, const char *want, size_t len, const char **why);

/* fixture builder (fixtures.c): run on the build host into a plain directory */
int make_fixtures(const char *dir, long long epoch);
extern const char *const copyup_ops[];

/* check areas */
void check_copyup(void);
void check_links(void);
void check_whiteout(void);
void check_readdir(void);
void check_misc(void);
void check_no_whiteout_visible(void);

#endif

#ifndef LIVE_META_H
#define LIVE_META_H
/* The store's meta file (liveunion-v1/meta): key=value lines the init writes at every boot with the store.
 * format= is the store's format version. This init writes STORE_FORMAT; it refuses a store of a newer
 * format (mounted read-only, nothing written, tmpfs instead) and upgrades an older one only by the steps
 * meta_upgrade() knows, each of which is named on the console. */
#include <stdbool.h>
#include <stddef.h>

#define STORE_FORMAT 1
/* Format 0: a meta file without a format= line (hand-made, or from a build before formats were recorded).
 * Its layout is format 1's; the one step 0 -> 1 adds the line. */
#define META_FORMAT_NONE 0

struct meta {
	long format;      /* format=, META_FORMAT_NONE when the line is missing */
	char image[80];   /* image= (the ISO's UUID the store was last used with), "" when missing */
	char created[40]; /* created=, "" when missing */
};

enum meta_verdict {
	META_FRESH,   /* no meta file: a new store, written as STORE_FORMAT */
	META_CURRENT, /* format == STORE_FORMAT */
	META_UPGRADE, /* older, and every step up to STORE_FORMAT is known */
	META_NEWER,   /* made by a newer liveunion: not used */
	META_BAD,     /* format= is not a number, or the file is not text: not used */
};

/* Parse the text of a meta file (NUL-terminated). Unknown keys are ignored; the last of a repeated key wins.
 * 0, or -1 when a format= line does not hold a decimal number from 0 to 999999 (m->format is then -1). */
int meta_parse(const char *text, struct meta *m);
/* What to do with a store whose meta is m (NULL: there is no meta file). */
enum meta_verdict meta_judge(const struct meta *m);
/* A one-line description of the verdict for the console, naming both versions where there are two. */
void meta_explain(const struct meta *m, enum meta_verdict v, char *buf, size_t len);
#endif

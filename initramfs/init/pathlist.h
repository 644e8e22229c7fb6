#ifndef LIVE_PATHLIST_H
#define LIVE_PATHLIST_H
/* The list of persistent paths (pathlist.c): pure, below the plan (plan.h includes this, not the other way). */
#include <stddef.h>

#define PATH_LEN 256
#define MAX_PATHS 16

/* A list of persistent paths (comma or newline separated) -> clean absolute paths, duplicates dropped.
 * Returns how many; a bad entry (also one whose name in the store, paths_key, would be too long) is skipped and named
 * in err ("" when all were good). */
int paths_parse(const char *list, char out[][PATH_LEN], int max, char *err, size_t elen);
/* A path as one directory name in the store: "/etc/ssh" -> "etc%2Fssh" (and "%" -> "%25"). -1 if too long. */
int paths_key(const char *path, char *out, size_t len);
#endif

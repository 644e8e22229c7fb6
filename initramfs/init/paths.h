#ifndef LIVE_PATHS_H
#define LIVE_PATHS_H
#include <stddef.h>

#include "plan.h"

/* A list of persistent paths (comma or newline separated) -> clean absolute paths, duplicates dropped.
 * Returns how many; a bad entry (also one whose name in the store, paths_key, would be too long) is skipped and named
 * in err ("" when all were good). */
int paths_parse(const char *list, char out[][PATH_LEN], int max, char *err, size_t elen);
/* A path as one directory name in the store: "/etc/ssh" -> "etc%2Fssh" (and "%" -> "%25"). -1 if too long. */
int paths_key(const char *path, char *out, size_t len);
/* With the store mounted (its liveunion-v1 at vdir): the paths of live.persist.paths, else of the store's
 * paths.conf, into b->paths; what was refused is said. Returns how many (0: everything persists). */
int paths_select(const struct plan *p, struct boot *b, const char *vdir);
/* After the overlay: an overlay per path in b->paths on the new root, the same layers below (their copy of
 * that directory) and an upper in the store. A path that fails is said loudly and does not stop the boot. */
int paths_mount(const struct plan *p, struct boot *b);
#endif

#ifndef LIVE_PATHS_H
#define LIVE_PATHS_H
#include <stddef.h>

#include "pathlist.h"
#include "plan.h"

/* live.persist.paths at boot: the store's paths.conf read, an overlay per path (paths.c); the list's parser is
 * pathlist.c's. */
/* With the store mounted (its liveunion-v1 at vdir): the paths of live.persist.paths, else of the store's
 * paths.conf, into b->paths; what was refused is said. Returns how many (0: everything persists). */
int paths_select(const struct plan *p, struct boot *b, const char *vdir);
/* After the overlay: an overlay per path in b->paths on the new root, the same layers below (their copy of
 * that directory) and an upper in the store. A path that fails is said loudly and does not stop the boot. */
int paths_mount(const struct plan *p, struct boot *b);
#endif

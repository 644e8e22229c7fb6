#ifndef LIVE_SAVED_H
#define LIVE_SAVED_H
#include "plan.h"

/* Saved layers (saved.c): what `liveunion save` wrote into a store's liveunion-v1/layers/. */

/* Attach and mount the planned saved layers; one that fails is said loudly and left out, the boot goes
 * on. With dm-verity a warning per layer: the boot menu has no root hash for them. Returns how many are
 * mounted. */
int saved_mount(const struct plan *p, struct boot *b, const char *what);
/* Unmount them again and take them out of the plan (the store is not used after all). */
void saved_unmount(struct boot *b);
/* The mounted store's saved layers (store_dir/liveunion-v1/layers/) listed and planned above the layers so far,
 * live.layers= applied; what is left out and why is said. One that cannot be listed is said and none are used. */
void saved_plan(const struct plan *p, struct boot *b, const char *store_dir);
#endif

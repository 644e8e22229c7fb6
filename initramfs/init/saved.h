#ifndef LIVE_SAVED_H
#define LIVE_SAVED_H
#include "plan.h"

/* Saved layers (saved.c): what `liveunion save` wrote into a store's liveunion-v1/layers/. */

/* List store_dir/liveunion-v1/layers/ and plan its NN-name.squashfs files above the medium's layers
 * (plan_add_saved; what is left out and why goes to the console). Returns how many, 0 when there is no
 * such directory, -1 with fail() set when it cannot be read. */
int saved_pick(struct plan *p, const char *store_dir);
/* Attach and mount the planned saved layers; one that fails is said loudly and left out, the boot goes
 * on. With dm-verity a warning per layer: the boot menu has no root hash for them. Returns how many are
 * mounted. */
int saved_mount(struct plan *p, const char *what);
/* Unmount them again and take them out of the plan (the store is not used after all). */
void saved_unmount(struct plan *p);
#endif

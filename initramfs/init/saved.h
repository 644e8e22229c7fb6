#ifndef LIVE_SAVED_H
#define LIVE_SAVED_H
#include "plan.h"
#include "store.h"

/* Saved layers (saved.c): what `liveunion save` wrote into a store's liveunion-v1/layers/. */

/* Attach and mount the planned saved layers; one that fails is said loudly and left out, the boot goes
 * on. With dm-verity a warning per layer: the boot menu has no root hash for them. Returns how many are
 * mounted. */
int saved_mount(const struct plan *p, struct boot *b, const char *what);
/* Unmount them again and take them out of the plan (the store is not used after all). */
void saved_unmount(struct boot *b);
/* live.layers= may name a saved layer; once the store has been looked at, a name found nowhere stops the
 * boot as a typo would have at step layers: -1 with fail() set. */
int saved_check_filter(const struct plan *p, const struct boot *b);
/* The mounted store's saved layers listed and planned above the medium's, live.layers= checked
 * (saved_check_filter); -1 when live.layers= names a
 * layer found nowhere, the store then released (nothing left mounted). */
int saved_plan(const struct plan *p, struct boot *b, struct store *s, int loopfd);
/* The upper step of live.persist=off: the store is still where saved layers come from ("reboot without
 * persistence" keeps what was saved). Looked for as auto does (the boot disk only: a stranger's stick never
 * supplies layers), mounted read-only without a journal replay, never written; the upper is a tmpfs. */
int saved_only_boot(const struct plan *p, struct boot *b);
#endif

#ifndef LIVE_STORE_STEP_H
#define LIVE_STORE_STEP_H
#include "plan.h"

/* The store step: the store live.persist= asks for found, unlocked, checked with e2fsck and mounted on
 * run_live/store in one mode (b->store.mode), or none with why in b->persist_result, said in one line; its saved
 * layers (and with live.persist.ro its upper) stacked above the medium's; live.layers= judged once over all of
 * them. -1 with fail() set when live.layers= names a layer found nowhere (the store given back) or the store's
 * mount points cannot be made; a store that cannot be used is not a failure. */
int store_step(const struct plan *p, struct boot *b);
/* Give the store back (the upper step could not use it, or the boot stops): its layers out of the stack, unmounted,
 * a LUKS mapping closed, mode none. say: "saved layers: left out with their store" and the result "not usable". */
void store_drop(struct boot *b, bool say);
#endif

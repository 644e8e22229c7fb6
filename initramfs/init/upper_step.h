#ifndef LIVE_UPPER_STEP_H
#define LIVE_UPPER_STEP_H
#include "plan.h"

/* The upper step: the store the store step mounted read-write bound on run_live/upper (its versioned directory made,
 * live.persist.reset honoured, its meta written), or only some paths in it (paths.c) with a tmpfs upper, or the tmpfs
 * upper alone (no store, live.persist.ro, or the store could not be prepared: said, and the store given back). */
int upper_step(const struct plan *p, struct boot *b);
#endif

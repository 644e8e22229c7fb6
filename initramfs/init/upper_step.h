#ifndef LIVE_PERSIST_H
#define LIVE_PERSIST_H
#include "plan.h"

/* The upper step: find the store live.persist= asks for, check it with e2fsck, mount it on
 * run_live/store and bind its versioned directory on run_live/upper. Without a usable store
 * (none found, off, errors) it says why in one line and falls back to the tmpfs upper. */
int persist_upper(const struct plan *p, struct boot *b);
#endif

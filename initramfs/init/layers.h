#ifndef LIVE_LAYERS_H
#define LIVE_LAYERS_H
#include "plan.h"

/* Choose layers from the file names in live/ (any order); bottom first by name, live.layers= applied.
 * Returns the number chosen, -1 with why in err. Names that are not NN-name.squashfs are skipped.
 * Entries of live.layers= that name none of them are marked in b->pick_unknown: they may name a saved layer of
 * the store, which is found later (layers_add_saved); layers_check_filter then refuses what is left. */
int layers_choose(const struct plan *p, struct boot *b, const char *const files[], int n, char *err, size_t elen);
/* Saved layers (liveunion save) from the file names in dir (the store's liveunion-v1/layers, any order):
 * added above the layers planned so far, by name, live.layers= applied, marked saved. A name the medium
 * already has, and what MAX_LAYERS leaves no room for, is skipped and named in note. Returns how many
 * were added. */
int layers_add_saved(const struct plan *p, struct boot *b, const char *const files[], int n, const char *dir,
		     char *note, size_t nlen);
/* Remove the saved layers from the plan again (their store could not be used). */
void layers_drop_saved(struct boot *b);
/* 0, or -1 with why in err when live.layers= names a layer that is neither on the medium nor saved
 * in the store: a typo must not boot a different system. */
int layers_check_filter(const struct plan *p, const struct boot *b, char *err, size_t elen);
#endif

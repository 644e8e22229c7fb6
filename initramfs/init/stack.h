#ifndef LIVE_STACK_H
#define LIVE_STACK_H
#include "plan.h"

/* Each returns 0, or -1 with fail() set to what was attempted. */
int stack_medium(const struct plan *p, const struct boot *b);  /* mount b->device (iso9660, ro) at run_live/medium */
int stack_layers(const struct plan *p, struct boot *b);        /* loop + mount every live/NN-name.squashfs */
int stack_upper(const struct plan *p);                         /* tmpfs at run_live/upper with upper/ and work/ */
int stack_overlay(const struct plan *p, const struct boot *b); /* overlay at newroot */
/* Loop (read-only) + dm-verity when verifying (not for a saved layer) + squashfs mount of one layer on l->dir. */
int stack_mount_layer(const struct plan *p, struct layer *l);
/* A warning when layer l names (LIVEUNION_BASE= in its extension-release file) another 10-base than b's. */
void stack_base_check(const struct boot *b, const struct layer *l);
/* "stack, bottom to top (...): ..." on the console; saved layers marked (store). */
void stack_print(const struct plan *p, const struct boot *b);
#endif

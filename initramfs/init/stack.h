#ifndef LIVE_STACK_H
#define LIVE_STACK_H
#include "plan.h"

/* Each returns 0, or -1 with fail() set to what was attempted. */
int stack_medium(struct plan *p);  /* mount plan->device (iso9660, ro) at run_live/medium */
int stack_layers(struct plan *p);  /* loop + mount every live/NN-name.squashfs */
int stack_upper(struct plan *p);   /* tmpfs at run_live/upper with upper/ and work/ */
int stack_overlay(struct plan *p); /* overlay at newroot */
/* Loop (read-only) + dm-verity when verifying (not for a saved layer) + squashfs mount of one layer on l->dir. */
int stack_mount_layer(struct plan *p, struct layer *l);
/* "stack, bottom to top (...): ..." on the console; saved layers marked (store). */
void stack_print(const struct plan *p);
#endif

#ifndef LIVE_PLAN_STEPS_H
#define LIVE_PLAN_STEPS_H
/* The boot steps in order; live.break= takes their names, which are the choices of its key (cmdline.c) in
 * this order. The store step finds and mounts the persistence store and stacks its layers; the upper step chooses
 * the store, some paths in it, or a tmpfs. */
enum step_id { S_MEDIUM, S_LAYERS, S_TORAM, S_STORE, S_UPPER, S_OVERLAY, S_SWITCH, S_COUNT, S_NONE = -1 };
const char *plan_step_name(enum step_id s);
#endif

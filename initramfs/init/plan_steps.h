#ifndef LIVE_PLAN_STEPS_H
#define LIVE_PLAN_STEPS_H
/* The boot steps in order; live.break= takes these names. Persistence (live.persist=) will add
 * a "persist" step between toram and upper: it decides whether the upper is a tmpfs or the store. */
enum step_id { S_MEDIUM, S_LAYERS, S_TORAM, S_UPPER, S_OVERLAY, S_SWITCH, S_COUNT, S_NONE = -1 };
extern const char *const step_names[S_COUNT];
/* Index of a step name, or S_NONE. */
int step_index(const char *name);
#endif

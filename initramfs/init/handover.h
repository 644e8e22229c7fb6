#ifndef LIVE_HANDOVER_H
#define LIVE_HANDOVER_H
#include "plan.h"

/* Whether init exists and is executable inside root (symlinks resolved inside root). */
int init_in_root(const char *root, const char *init);
/* Move /run /dev /proc /sys into the new root, delete the initramfs, make the new root / and
 * exec its init. Returns only on failure (-1, fail() set). */
int handover(const struct plan *p, char *const argv[]);
#endif

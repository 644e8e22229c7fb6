#ifndef LIVE_HANDOVER_H
#define LIVE_HANDOVER_H
#include "plan.h"

/* Whether init exists and is executable inside root (symlinks resolved inside root). */
int handover_check_init(const char *root, const char *init);
/* Move /run /dev /proc /sys into the new root, delete the initramfs, make the new root / and exec its
 * init. Returns only on a failure before the initramfs is touched (-1, fail() set; the mounts moved so far
 * are moved back, so the rescue shell has what it had). Past the point of no return, once the initramfs'
 * contents are deleted, a failure is reported and the process exits: as PID 1 that is a kernel panic,
 * never a rescue shell whose programs are gone (as busybox switch_root and klibc run-init do). */
int handover(const struct plan *p, char *const argv[]);
#endif

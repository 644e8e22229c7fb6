#ifndef LIVE_STACKER_H
#define LIVE_STACKER_H
#include "boot.h"

/* The places the stacker reads and writes: /proc/cmdline, /proc/meminfo, /run/live; a host test gives its own. */
struct stacker_where {
	const char *cmdline, *meminfo, *run_live;
};

/* `liveunion-stack --root DIR` (or `init --stack --root DIR`, or `mount.liveunion SPEC DIR` from mount(8)): the steps of our init up to the overlay, inside
 * another initramfs (dracut's), leaving the finished root mounted at DIR for that initramfs to switch to.
 * The same live.* keys, messages (on stderr), /run/live and failure report; no rescue shell, no switch_root.
 * Returns the exit status: 0 with the root at DIR, 1 after the failure report, 2 for a wrong command line. */
int stacker_main(int argc, char **argv, struct boot_env *env, const struct stacker_where *w);
/* Whether argv asks for the stacker: argv[0] named liveunion-stack or mount.liveunion, or --stack first. */
int stacker_wanted(int argc, char **argv);
#endif

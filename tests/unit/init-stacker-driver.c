/* Test driver for init-stacker.sh: the stacker's real entry (stacker_main, what `liveunion-stack` runs) with
 * the places it reads given on the command line instead of /sys/class/block, /dev, /proc/cmdline and /run/live.
 * An optional FSTYPE:DEVICE ("-" for none) is mounted as the medium once discovery has matched the ISO: for
 * build hosts whose kernel has no iso9660. The arguments after "--" are the stacker's own (--root DIR). */
#include <stdio.h>
#include <string.h>

#include "boot.h"
#include "stacker.h"

int main(int argc, char **argv)
{
	struct boot_env env = {NULL, NULL, S_SWITCH, true, NULL, NULL};
	struct stacker_where w = {NULL, "/proc/meminfo", NULL};

	if (argc < 7 || strcmp(argv[6], "--") != 0) {
		fprintf(stderr, "usage: %s SYSBLOCK DEVDIR CMDLINE_FILE RUN_LIVE FSTYPE:DEVICE|- -- [--root DIR]\n",
			argv[0]);
		return 3;
	}
	env.sysblock = argv[1];
	env.dev = argv[2];
	w.cmdline = argv[3];
	w.run_live = argv[4];
	if (strcmp(argv[5], "-") != 0)
		env.medium_stand_in = argv[5];
	argv[6] = "liveunion-stack"; /* argv[0] of the stacker */
	return stacker_main(argc - 6, argv + 6, &env, &w);
}

/* Test driver for init-stack.sh: runs the init's real discovery and stack steps (medium, layers,
 * toram, upper, overlay) and the new-root init check against directories given on the command
 * line instead of /sys/class/block, /dev, /run/live and /newroot. Everything but the final
 * switch_root, which only PID 1 of an initramfs can do.
 * An optional FSTYPE:DEVICE mounts that device as the medium once discovery has matched the ISO:
 * for build hosts whose kernel has no iso9660. */
#include <stdio.h>
#include <string.h>

#include "cmdline.h"
#include "discover.h"
#include "handover.h"
#include "log.h"
#include "plan.h"
#include "stack.h"
#include "toram.h"
#include "util.h"

static void warn_msg(void *ctx, const char *text)
{
	(void)ctx;
	msg("%s", text);
}

static void save(const struct plan *p)
{
	static char buf[16384];
	char path[PATH_LEN + 8];
	FILE *f;
	size_t n = plan_print(p, buf, sizeof(buf));

	snprintf(path, sizeof(path), "%s/plan", p->run_live);
	f = fopen(path, "w");
	if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0)
		msg("cannot write %s", path);
}

int main(int argc, char **argv)
{
	static struct cmdline c;
	static struct plan p;
	struct facts f;
	int i, rc = 0;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s SYSBLOCK DEVDIR RUN_LIVE NEWROOT CMDLINE [FSTYPE:DEVICE]\n", argv[0]);
		return 2;
	}
	log_use_fd(1);
	cmdline_parse(argv[5], &c, warn_msg, NULL);
	if (read_meminfo("/proc/meminfo", &f.mem_total, &f.mem_available) != 0)
		return 2;
	plan_make(&c, &f, argv[3], argv[4], &p);
	log_debug_enable(p.debug);
	if (mkdir_p(p.run_live, 0755) != 0)
		rc = -1;
	for (i = 0; rc == 0 && i <= S_OVERLAY; i++) {
		switch (i) {
		case S_MEDIUM:
			rc = discover_medium(&p, argv[1], argv[2]);
			if (rc == 0 && argc == 7) {
				const char *colon = strchr(argv[6], ':');

				if (!colon || (size_t)(colon - argv[6]) >= sizeof(p.medium_fstype))
					return 2;
				memcpy(p.medium_fstype, argv[6], (size_t)(colon - argv[6]));
				p.medium_fstype[colon - argv[6]] = '\0';
				snprintf(p.device, sizeof(p.device), "%s", colon + 1);
				msg("test: mounting the stand-in %s (%s) as the medium", p.device, p.medium_fstype);
			}
			if (rc == 0)
				rc = stack_medium(&p);
			break;
		case S_LAYERS: rc = stack_layers(&p); break;
		case S_TORAM: rc = stack_toram(&p); break;
		case S_UPPER: rc = stack_upper(&p); break;
		case S_OVERLAY: rc = stack_overlay(&p); break;
		}
		if (rc == 0)
			p.done = i + 1;
		else
			msg("step %s failed", step_name(i));
	}
	if (rc == 0 && init_in_root(p.newroot, p.init) == 0)
		msg("init %s found in %s", p.init, p.newroot);
	else if (rc == 0)
		rc = -1;
	save(&p);
	if (rc != 0) {
		msg("%s: %s", fail_what(), strerror(fail_errno()));
		return 1;
	}
	return 0;
}

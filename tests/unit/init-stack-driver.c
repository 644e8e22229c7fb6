/* Test driver for init-stack.sh: runs the init's real discovery and stack steps (medium, layers,
 * toram, upper, overlay) and the new-root init check against directories given on the command
 * line instead of /sys/class/block, /dev, /run/live and /newroot. Everything but the final
 * switch_root, which only PID 1 of an initramfs can do.
 * An optional FSTYPE:DEVICE mounts that device as the medium once discovery has matched the ISO:
 * for build hosts whose kernel has no iso9660. With INIT_STACK_NO_LOWERDIR_PLUS=1 in the environment,
 * fsconfig(2) fails with EINVAL (a seccomp filter) as "lowerdir+" does on kernels before 6.8: the overlay
 * then goes through mount(2). */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

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

static void save(const struct plan *p, const struct boot *b)
{
	static char buf[16384];
	char path[PATH_LEN + 8];
	FILE *f;
	size_t n = plan_print(p, b, buf, sizeof(buf));

	snprintf(path, sizeof(path), "%s/plan", p->run_live);
	f = fopen(path, "w");
	if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0)
		msg("cannot write %s", path);
}

/* The kernel's answer to fsconfig becomes EINVAL for this process; everything else runs as usual. */
static int refuse_fsconfig(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fsconfig, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("seccomp filter for fsconfig");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct cmdline c;
	static struct plan p;
	static struct boot b;
	struct facts f;
	int i, rc = 0;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s SYSBLOCK DEVDIR RUN_LIVE NEWROOT CMDLINE [FSTYPE:DEVICE]\n", argv[0]);
		return 2;
	}
	log_use_fd(1);
	if (getenv("INIT_STACK_NO_LOWERDIR_PLUS") && strcmp(getenv("INIT_STACK_NO_LOWERDIR_PLUS"), "1") == 0 &&
	    refuse_fsconfig() != 0)
		return 2;
	cmdline_parse(argv[5], &c, warn_msg, NULL);
	if (read_meminfo("/proc/meminfo", &f.mem_total, &f.mem_available) != 0)
		return 2;
	plan_make(&c, &f, argv[3], argv[4], &p);
	plan_boot_init(&p, &b);
	log_debug_enable(p.debug);
	if (mkdir_p(p.run_live, 0755) != 0)
		rc = -1;
	for (i = 0; rc == 0 && i <= S_OVERLAY; i++) {
		switch (i) {
		case S_MEDIUM:
			rc = discover_medium(&p, &b, argv[1], argv[2]);
			if (rc == 0 && argc == 7) {
				const char *colon = strchr(argv[6], ':');

				if (!colon || (size_t)(colon - argv[6]) >= sizeof(b.medium_fstype))
					return 2;
				memcpy(b.medium_fstype, argv[6], (size_t)(colon - argv[6]));
				b.medium_fstype[colon - argv[6]] = '\0';
				snprintf(b.device, sizeof(b.device), "%s", colon + 1);
				msg("test: mounting the stand-in %s (%s) as the medium", b.device, b.medium_fstype);
			}
			if (rc == 0)
				rc = stack_medium(&p, &b);
			break;
		case S_LAYERS: rc = stack_layers(&p, &b); break;
		case S_TORAM: rc = toram_copy(&p, &b); break;
		case S_UPPER: rc = stack_upper(&p); break;
		case S_OVERLAY: rc = stack_overlay(&p, &b); break;
		}
		if (rc == 0)
			b.done = i + 1;
		else
			msg("step %s failed", plan_step_name(i));
	}
	if (rc == 0 && handover_check_init(p.newroot, p.init) == 0)
		msg("init %s found in %s", p.init, p.newroot);
	else if (rc == 0)
		rc = -1;
	save(&p, &b);
	if (rc != 0) {
		msg("%s: %s", fail_what(), strerror(fail_errno()));
		return 1;
	}
	return 0;
}

/* PID 1 of the liveunion initramfs: command line -> plan -> steps (boot.c) -> switch_root; or, called as
 * liveunion-stack or mount.liveunion, the same steps inside another initramfs (stacker.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "cmdline.h"
#include "disk.h"
#include "liveunion/contract.h"
#include "log.h"
#include "nbd.h"
#include "plan.h"
#include "stacker.h"
#include "util.h"

#ifndef LIVEUNION_VERSION
#define LIVEUNION_VERSION "dev"
#endif

#define NEWROOT "/newroot"

/* Before the consoles are known, fd 2 is /dev/console from the initramfs. */
static int early_mounts(void)
{
	static const struct {
		const char *dir, *type, *data;
		unsigned long flags;
	} m[] = {
		{"/proc", "proc", NULL, MS_NODEV | MS_NOSUID | MS_NOEXEC},
		{"/sys", "sysfs", NULL, MS_NODEV | MS_NOSUID | MS_NOEXEC},
		{"/dev", "devtmpfs", "mode=0755", MS_NOSUID},
		{"/run", "tmpfs", "mode=0755", MS_NODEV | MS_NOSUID},
	};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		if (mkdir(m[i].dir, 0755) != 0 && errno != EEXIST)
			return fail(errno, "mkdir %s", m[i].dir);
		if (do_mount(m[i].type, m[i].dir, m[i].type, m[i].flags, m[i].data) != 0)
			return -1;
	}
	return mkdir_p(LIVE_RUN, 0755);
}

int main(int argc, char **argv)
{
	static struct plan p;
	static struct boot b;
	struct boot_env env = {SYSBLOCK, "/dev", S_SWITCH, true, argv, NULL};

	if (argc > 1 && strcmp(argv[1], "--help-keys") == 0) {
		static char buf[8192];
		size_t n = cmdline_help(buf, sizeof(buf));

		return fwrite(buf, 1, n, stdout) == n && fflush(stdout) == 0 ? 0 : 1;
	}
	if (stacker_wanted(argc, argv)) {
		static const struct stacker_where where = {"/proc/cmdline", "/proc/meminfo", LIVE_RUN};

		return stacker_main(argc, argv, &env, &where);
	}
	boot_started(boot_mono_ms());
	if (getpid() != 1) {
		fprintf(stderr, "liveunion init: runs only as PID 1 of the initramfs (try --help-keys, or --stack "
				"--root DIR inside another initramfs)\n");
		return 2;
	}
	nbd_set_name_area(argv[0], strlen(argv[0]) + 1);
	if (early_mounts() != 0)
		fprintf(stderr, "liveunion: %s: %s\n", fail_what(), strerror(fail_errno()));
	log_open_consoles();
	msg("init %s", LIVEUNION_VERSION);
	boot_prepare("/proc/cmdline", "/proc/meminfo", LIVE_RUN, NEWROOT, true, &p, &b);
	argv[0] = p.init;
	if (boot_run(&p, &b, &env) != 0)
		return 1; /* reported; PID 1 exiting is the kernel panic live.panic asks for */
	return 1;         /* not reached: step switch execs the live root's init or fails */
}

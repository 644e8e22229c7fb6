#ifndef LIVE_BOOT_H
#define LIVE_BOOT_H
#include "plan.h"

/* The step loop both callers of the stacker share (main.c): PID 1 of our initramfs, which hands over with
 * switch_root, and the stacker inside another initramfs (dracut), which leaves the finished root at
 * p->newroot and exits. The plan is const once made; the steps fill the boot state b. */
struct boot_env {
	const char *sysblock, *dev; /* where discovery looks: /sys/class/block and /dev */
	enum step_id last;          /* S_SWITCH (PID 1) or S_OVERLAY (the stacker) */
	bool shell;                 /* a failed step: the rescue shell and a retry (PID 1), else the report and -1 */
	char **init_argv;           /* PID 1: the live init's argv (argv[0] becomes live.init) */
	/* Host tests only (tests/unit/init-stacker.sh), for a build host whose kernel has no iso9660: "FSTYPE:DEVICE"
	 * mounted as the medium once discovery has matched the ISO. NULL at boot. */
	const char *medium_stand_in;
};

/* ms of CLOCK_MONOTONIC (the kernel log's clock); the init's start is recorded with it. */
unsigned long long boot_mono_ms(void);
void boot_started(unsigned long long ms);
/* The start both callers share: the command line read from cmdline_path (its defaults when unreadable) and
 * parsed, the plan made for newroot under run_live (memory from meminfo_path), the boot state set up, the modules
 * loaded (devices: coldplug and uevents as well; false: the caller's udev has the device drivers), then the plan
 * printed and saved. Problems are reported and the defaults kept; the command line's text stays in static
 * storage, where modload reads it later. */
void boot_prepare(const char *cmdline_path, const char *meminfo_path, const char *run_live, const char *newroot,
		  bool devices, struct plan *p, struct boot *b);
/* The plan as "  key=value" lines under a title, on the consoles. */
void boot_print_plan(const struct plan *p, const struct boot *b, const char *title);
/* The plan and the step times into run_live/plan, the file the live system reads. */
void boot_save_plan(const struct plan *p, const struct boot *b);
/* Carry out the steps up to env->last in order (live.break= honoured when env->shell). 0 once they are all
 * done; -1 after a failure was reported (the failing step, why, the plan) and not retried. */
int boot_run(const struct plan *p, struct boot *b, const struct boot_env *env);
#endif

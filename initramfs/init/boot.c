/* The step loop: medium, layers, toram, store, upper, overlay, and for PID 1 the switch; the one failure report. */
#include "boot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmdline.h"
#include "discover.h"
#include "fetch.h"
#include "handover.h"
#include "liveunion/contract.h"
#include "log.h"
#include "modload.h"
#include "nbd.h"
#include "paths.h"
#include "shell.h"
#include "stack.h"
#include "store_step.h"
#include "toram.h"
#include "upper_step.h"
#include "util.h"

/* The boot budget (bench/boot, `liveunion status`): when the init started and each step began and ended,
 * in ms of CLOCK_MONOTONIC, the clock of the kernel log's timestamps, so host-side marks from the serial
 * log line up with these. 0 = not reached. */
static struct {
	unsigned long long init, start[S_COUNT], end[S_COUNT];
} t;

unsigned long long boot_mono_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

void boot_started(unsigned long long ms)
{
	t.init = ms;
}

/* time.init=MS, then time.STEP=START_MS+DURATION_MS for every step begun (no duration while running). */
static size_t print_times(char *buf, size_t len)
{
	size_t used = 0;
	int i, n;

	n = snprintf(buf, len, "time.init=%llu\n", t.init);
	if (n < 0 || (size_t)n >= len)
		return 0;
	used = (size_t)n;
	for (i = 0; i < S_COUNT && t.start[i]; i++) {
		if (t.end[i])
			n = snprintf(buf + used, len - used, "time.%s=%llu+%llu\n", plan_step_name((enum step_id)i),
				     t.start[i], t.end[i] - t.start[i]);
		else
			n = snprintf(buf + used, len - used, "time.%s=%llu\n", plan_step_name((enum step_id)i),
				     t.start[i]);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return used;
}

/* A host test's stand-in for the ISO (boot_env.medium_stand_in), once discovery has found the real one. */
static int use_stand_in(struct boot *b, const struct boot_env *env)
{
	const char *colon = strchr(env->medium_stand_in, ':');

	if (!colon || (size_t)(colon - env->medium_stand_in) >= sizeof(b->medium_fstype))
		return fail(EINVAL, "medium stand-in %s: not FSTYPE:DEVICE", env->medium_stand_in);
	text_fmt(b->medium_fstype, sizeof(b->medium_fstype), "%.*s", (int)(colon - env->medium_stand_in),
		 env->medium_stand_in);
	text_fmt(b->device, sizeof(b->device), "%s", colon + 1);
	msg("test: mounting the stand-in %s (%s) as the medium", b->device, b->medium_fstype);
	return 0;
}

static int step_medium(const struct plan *p, struct boot *b, const struct boot_env *env)
{
	int rc;

	if (p->net == NET_FETCH)
		return fetch_medium(p, b);
	if (p->net == NET_NBD && nbd_connect(p, b) != 0)
		return -1;
	if (discover_medium(p, b, env->sysblock, env->dev) != 0)
		return -1;
	rc = env->medium_stand_in ? use_stand_in(b, env) : 0;
	if (rc == 0)
		rc = stack_medium(p, b);
	discover_done();
	return rc;
}

static int step_overlay(const struct plan *p, struct boot *b)
{
	if (stack_overlay(p, b) != 0)
		return -1;
	return paths_mount(p, b);
}

static int step_switch(const struct plan *p, struct boot *b, const struct boot_env *env)
{
	(void)b; /* the hand-over only reads the plan */
	return handover(p, env->init_argv);
}

/* Indexed by enum step_id: run, or run_env for a step that needs the caller's setup (where discovery looks, the
 * live init's argv). The store step decides whether there is a store and in which mode; the upper step reads that
 * decision. */
static const struct {
	int (*run)(const struct plan *, struct boot *);
	int (*run_env)(const struct plan *, struct boot *, const struct boot_env *);
} steps[S_COUNT] = {
	[S_MEDIUM] = {.run_env = step_medium}, [S_LAYERS] = {.run = stack_layers}, [S_TORAM] = {.run = toram_copy},
	[S_STORE] = {.run = store_step},       [S_UPPER] = {.run = upper_step},    [S_OVERLAY] = {.run = step_overlay},
	[S_SWITCH] = {.run_env = step_switch},
};

static int run_step(int i, const struct plan *p, struct boot *b, const struct boot_env *e)
{
	return steps[i].run ? steps[i].run(p, b) : steps[i].run_env(p, b, e);
}

static void warn_msg(void *ctx, const char *text)
{
	(void)ctx; /* callback signature */
	msg("%s", text);
}

void boot_prepare(const char *cmdline_path, const char *meminfo_path, const char *run_live, const char *newroot,
		  bool devices, struct plan *p, struct boot *b)
{
	static char cmdline_text[4096];
	static struct cmdline c;
	static struct modload mods;
	struct facts f = {0, 0};

	if (read_text(cmdline_path, cmdline_text, sizeof(cmdline_text)) < 0)
		msg("%s: %s; using the defaults", fail_what(), strerror(fail_errno()));
	cmdline_parse(cmdline_text, &c, warn_msg, NULL);
	if (read_meminfo(meminfo_path, &f.mem_total, &f.mem_available) != 0)
		msg("%s: %s", fail_what(), strerror(fail_errno()));
	plan_make(&c, &f, run_live, newroot, p);
	plan_boot_init(p, b);
	if (p->adjusted[0])
		msg("%s", p->adjusted);
	log_debug_enable(p->debug);
	modload_start(&mods, cmdline_text, devices);
	b->mods = &mods;
	text_fmt(b->kernel, sizeof(b->kernel), "%s", modload_flavour(&mods));
	text_fmt(b->kernel_overlay, sizeof(b->kernel_overlay), "%s", modload_overlay(&mods));
	boot_print_plan(p, b, "plan:");
	boot_save_plan(p, b);
}

void boot_print_plan(const struct plan *p, const struct boot *b, const char *title)
{
	static char buf[65536]; /* 128 layers with dm-verity */
	char *line, *save = NULL;

	if (plan_print(p, b, buf, sizeof(buf)) == 0)
		return;
	msg("%s", title);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		msg("  %s", line);
}

void boot_save_plan(const struct plan *p, const struct boot *b)
{
	static char buf[65536]; /* 128 layers with dm-verity */
	char path[PATH_LEN + 8];
	size_t n = plan_print(p, b, buf, sizeof(buf));
	int fd;

	n += print_times(buf + n, sizeof(buf) - n);
	if (path_fmt(path, sizeof(path), "%s/" LIVE_PLAN, p->run_live) != 0) {
		msg("%s: %s", fail_what(), strerror(fail_errno()));
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		msg("write %s: %s", path, strerror(errno));
		return;
	}
	if (write_full(fd, buf, n) != 0)
		msg("write %s: %s", path, strerror(errno));
	if (close(fd) != 0)
		msg("close %s: %s", path, strerror(errno));
}

/* Report a failure once; then PID 1's shell (or the panic the user asked for). 0 = retry the step. */
static int report(const struct plan *p, const struct boot *b, int step, const struct boot_env *env)
{
	char why[128];

	msg("%s: %s", fail_what(), strerror(fail_errno()));
	msg("step %s failed", plan_step_name(step));
	boot_print_plan(p, b, "the plan was:");
	if (!env->shell) {
		msg("the root is not ready at %s: the stacker exits with status 1", p->newroot);
		return -1;
	}
	if (p->panic) {
		msg("live.panic: stopping; PID 1 exits and the kernel panics");
		return -1;
	}
	text_fmt(why, sizeof(why), "step %s failed; exit to retry it", plan_step_name(step));
	if (rescue_shell(why) != 0) {
		msg("%s: %s; nothing else to do but panic", fail_what(), strerror(fail_errno()));
		return -1;
	}
	msg("rescue shell exited: retrying step %s", plan_step_name(step));
	fail_clear();
	return 0;
}

int boot_run(const struct plan *p, struct boot *b, const struct boot_env *e)
{
	int i;

	for (i = 0; i <= e->last; i++) {
		if (p->break_step == i) {
			char why[64];

			text_fmt(why, sizeof(why), "live.break=%s: before step %s", plan_step_name(i),
				 plan_step_name(i));
			msg("%s", why);
			if (!e->shell)
				msg("live.break= is our initramfs' rescue shell; in this initramfs use its own "
				    "(dracut: rd.break=); going on");
			else if (rescue_shell(why) != 0)
				msg("%s: %s; continuing the boot", fail_what(), strerror(fail_errno()));
		}
		fail_clear();
		t.start[i] = boot_mono_ms();
		t.end[i] = 0;
		if (i == S_SWITCH)
			boot_save_plan(p, b); /* the last word the live root reads: the hand-over's start */
		modload_poll(b->mods);
		while (run_step(i, p, b, e) != 0) {
			boot_save_plan(p, b);
			if (report(p, b, i, e) != 0)
				return -1;
		}
		b->done = i + 1;
		t.end[i] = boot_mono_ms();
		boot_save_plan(p, b);
	}
	return 0;
}

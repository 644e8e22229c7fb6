/* PID 1 of the liveunion initramfs: command line -> plan -> steps -> switch_root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
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
#include "persist.h"
#include "plan.h"
#include "shell.h"
#include "stack.h"
#include "toram.h"
#include "util.h"

#ifndef LIVEUNION_VERSION
#define LIVEUNION_VERSION "dev"
#endif

#define NEWROOT "/newroot"

static char **init_argv;

/* The boot budget (bench/boot, `liveunion status`): when the init started and each step began and ended,
 * in ms of CLOCK_MONOTONIC, the clock of the kernel log's timestamps, so host-side marks from the serial
 * log line up with these. 0 = not reached. */
static struct {
	unsigned long long init, start[S_COUNT], end[S_COUNT];
} t;

static unsigned long long mono_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
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

static int step_medium(const struct plan *p, struct boot *b)
{
	int rc;

	if (p->net == NET_FETCH)
		return fetch_medium(p, b);
	if (p->net == NET_NBD && nbd_connect(p, b) != 0)
		return -1;
	if (discover_medium(p, b, "/sys/class/block", "/dev") != 0)
		return -1;
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

static int step_switch(const struct plan *p, struct boot *b)
{
	(void)b; /* the hand-over only reads the plan */
	return handover(p, init_argv);
}

/* Indexed by enum step_id. The upper step is persist.c's: the store when there is a usable one,
 * else the tmpfs of stack_upper. */
static int (*const steps[S_COUNT])(const struct plan *, struct boot *) = {
	[S_MEDIUM] = step_medium,  [S_LAYERS] = stack_layers,  [S_TORAM] = toram_copy,
	[S_UPPER] = persist_upper, [S_OVERLAY] = step_overlay, [S_SWITCH] = step_switch,
};

static void warn_msg(void *ctx, const char *text)
{
	(void)ctx; /* callback signature */
	msg("%s", text);
}

static void print_plan(const struct plan *p, const struct boot *b, const char *title)
{
	static char buf[65536]; /* 128 layers with dm-verity */
	char *line, *save = NULL;

	if (plan_print(p, b, buf, sizeof(buf)) == 0)
		return;
	msg("%s", title);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		msg("  %s", line);
}

static void save_plan(const struct plan *p, const struct boot *b)
{
	static char buf[65536]; /* 128 layers with dm-verity */
	size_t n = plan_print(p, b, buf, sizeof(buf));
	int fd;

	n += print_times(buf + n, sizeof(buf) - n);
	fd = open(LIVE_RUN "/" LIVE_PLAN, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		msg("write " LIVE_RUN "/" LIVE_PLAN ": %s", strerror(errno));
		return;
	}
	if (write_full(fd, buf, n) != 0)
		msg("write " LIVE_RUN "/" LIVE_PLAN ": %s", strerror(errno));
	if (close(fd) != 0)
		msg("close " LIVE_RUN "/" LIVE_PLAN ": %s", strerror(errno));
}

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

/* Report a failure once, then the shell (or the panic the user asked for). 0 = retry the step. */
static int report(const struct plan *p, const struct boot *b, int step)
{
	char why[128];

	msg("%s: %s", fail_what(), strerror(fail_errno()));
	msg("step %s failed", plan_step_name(step));
	print_plan(p, b, "the plan was:");
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

int main(int argc, char **argv)
{
	static char cmdline_text[4096];
	static struct cmdline c;
	static struct plan p;
	static struct boot b;
	struct facts f = {0, 0};
	int i;

	if (argc > 1 && strcmp(argv[1], "--help-keys") == 0) {
		static char buf[8192];
		size_t n = cmdline_help(buf, sizeof(buf));

		return fwrite(buf, 1, n, stdout) == n && fflush(stdout) == 0 ? 0 : 1;
	}
	t.init = mono_ms();
	if (getpid() != 1) {
		fprintf(stderr, "liveunion init: runs only as PID 1 of the initramfs (try --help-keys)\n");
		return 2;
	}
	init_argv = argv;
	nbd_set_name_area(argv[0], strlen(argv[0]) + 1);
	if (early_mounts() != 0)
		fprintf(stderr, "liveunion: %s: %s\n", fail_what(), strerror(fail_errno()));
	log_open_consoles();
	msg("init %s", LIVEUNION_VERSION);
	if (read_text("/proc/cmdline", cmdline_text, sizeof(cmdline_text)) < 0)
		msg("%s: %s; using the defaults", fail_what(), strerror(fail_errno()));
	cmdline_parse(cmdline_text, &c, warn_msg, NULL);
	if (read_meminfo("/proc/meminfo", &f.mem_total, &f.mem_available) != 0)
		msg("%s: %s", fail_what(), strerror(fail_errno()));
	plan_make(&c, &f, LIVE_RUN, NEWROOT, &p);
	plan_boot_init(&p, &b);
	if (p.adjusted[0])
		msg("%s", p.adjusted);
	log_debug_enable(p.debug);
	modload_start(cmdline_text);
	text_fmt(b.kernel, sizeof(b.kernel), "%s", modload_flavour());
	text_fmt(b.kernel_overlay, sizeof(b.kernel_overlay), "%s", modload_overlay());
	argv[0] = p.init;
	print_plan(&p, &b, "plan:");
	save_plan(&p, &b);
	for (i = 0; i < S_COUNT; i++) {
		if (p.break_step == i) {
			char why[64];

			text_fmt(why, sizeof(why), "live.break=%s: before step %s", plan_step_name(i),
				 plan_step_name(i));
			msg("%s", why);
			if (rescue_shell(why) != 0)
				msg("%s: %s; continuing the boot", fail_what(), strerror(fail_errno()));
		}
		fail_clear();
		t.start[i] = mono_ms();
		t.end[i] = 0;
		if (i == S_SWITCH)
			save_plan(&p, &b); /* the last word the live root reads: the hand-over's start */
		modload_poll();
		while (steps[i](&p, &b) != 0) {
			save_plan(&p, &b);
			if (report(&p, &b, i) != 0)
				return 1;
		}
		b.done = i + 1;
		t.end[i] = mono_ms();
		save_plan(&p, &b);
	}
	return 1; /* not reached: step switch execs the live root's init or fails */
}

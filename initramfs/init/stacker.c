/* The stacker inside another initramfs: our steps up to the overlay, the root left at --root DIR. */
#include "stacker.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "handover.h"
#include "log.h"
#include "util.h"

#ifndef LIVEUNION_VERSION
#define LIVEUNION_VERSION "dev"
#endif

#define STACKER_NAME "liveunion-stack"
#define MOUNT_HELPER "mount.liveunion"
#define USAGE                                                                                                  \
	"usage: " STACKER_NAME " --root DIR (or: init --stack --root DIR; as mount(8)'s helper: " MOUNT_HELPER \
	" liveunion DIR [-o OPTIONS])\n"

static const char *base_name(int argc, char **argv)
{
	const char *slash = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;

	return slash ? slash + 1 : argc > 0 && argv[0] ? argv[0] : "";
}

int stacker_wanted(int argc, char **argv)
{
	const char *base = base_name(argc, argv);

	return strcmp(base, STACKER_NAME) == 0 || strcmp(base, MOUNT_HELPER) == 0 ||
	       (argc > 1 && strcmp(argv[1], "--stack") == 0);
}

/* mount(8) runs "mount.liveunion SPEC DIR [-sfnv] [-o OPTIONS] [-t TYPE]" (systemd's sysroot.mount): the root
 * goes to DIR; the options mean nothing to the stacker (the live.* keys say what to do). NULL if malformed. */
static const char *mount_helper_root(int argc, char **argv)
{
	int i;

	if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-')
		return NULL;
	for (i = 3; i < argc; i++) {
		if (argv[i][0] != '-')
			return NULL;
		if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "-t") == 0) && ++i >= argc)
			return NULL;
	}
	return argv[2];
}

/* DIR must be an existing directory that nothing is mounted on yet: a second run must not stack twice. */
static int root_usable(const char *root)
{
	char parent[PATH_LEN + 4];
	struct stat st, pst;

	if (root[0] != '/')
		return fail(EINVAL, "--root %s: not an absolute path", root);
	if (stat(root, &st) != 0)
		return fail(errno, "stat --root %s", root);
	if (!S_ISDIR(st.st_mode))
		return fail(ENOTDIR, "--root %s", root);
	if (path_fmt(parent, sizeof(parent), "%s/..", root) != 0)
		return -1;
	if (stat(parent, &pst) != 0)
		return fail(errno, "stat %s", parent);
	if (st.st_dev != pst.st_dev && strcmp(root, "/") != 0)
		return fail(EBUSY, "--root %s: something is mounted there already", root);
	return 0;
}

int stacker_main(int argc, char **argv, struct boot_env *env, const struct stacker_where *w)
{
	static struct plan p;
	static struct boot b;
	const char *root = NULL;
	int i;

	boot_started(boot_mono_ms());
	if (strcmp(base_name(argc, argv), MOUNT_HELPER) == 0) {
		root = mount_helper_root(argc, argv);
		if (!root) {
			fprintf(stderr, MOUNT_HELPER ": expected SPEC DIR [-o OPTIONS] from mount(8)\n" USAGE);
			return 2;
		}
	}
	for (i = root ? argc : 1; i < argc; i++) {
		if (i == 1 && strcmp(argv[i], "--stack") == 0)
			continue;
		if (strcmp(argv[i], "--root") == 0 && i + 1 < argc && !root)
			root = argv[++i];
		else {
			fprintf(stderr, STACKER_NAME ": unexpected argument '%s'\n" USAGE, argv[i]);
			return 2;
		}
	}
	if (!root) {
		fprintf(stderr, STACKER_NAME ": --root DIR is needed: where the finished root is left\n" USAGE);
		return 2;
	}
	/* Messages go to stderr: the caller's console (dracut's hooks) or its journal (a systemd unit). */
	log_use_fd(2);
	msg("stacker %s: the live root goes to %s", LIVEUNION_VERSION, root);
	if (root_usable(root) != 0 || mkdir_p(w->run_live, 0755) != 0) {
		msg("%s: %s", fail_what(), strerror(fail_errno()));
		msg("nothing was done: the stacker exits with status 1");
		return 1;
	}
	boot_prepare(w->cmdline, w->meminfo, w->run_live, root, false, &p, &b); /* device drivers: the caller's udev */
	env->last = S_OVERLAY;
	env->shell = false;
	if (boot_run(&p, &b, env) != 0)
		return 1;
	/* What switch_root would check first, so a missing init is reported here, with the plan. */
	if (handover_check_init(p.newroot, p.init) != 0) {
		msg("%s: %s", fail_what(), strerror(fail_errno()));
		msg("step %s failed", plan_step_name(S_SWITCH));
		boot_print_plan(&p, &b, "the plan was:");
		msg("the root at %s has no init %s: the stacker exits with status 1", p.newroot, p.init);
		return 1;
	}
	msg("the live root is ready at %s (init %s): the caller switches to it", p.newroot, p.init);
	return 0;
}

#include "stack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/mount.h>

#include "layers.h"
#include "liveunion/contract.h"
#include "log.h"
#include "loop.h"
#include "util.h"
#include "verity.h"

int stack_medium(const struct plan *p, const struct boot *b)
{
	char dir[PATH_LEN + 16];

	if (snprintf(dir, sizeof(dir), "%s/" LIVE_MEDIUM, p->run_live) >= (int)sizeof(dir))
		return fail(ENAMETOOLONG, "medium mount point under %s", p->run_live);
	if (mkdir_p(dir, 0755) != 0)
		return -1;
	if (do_mount(b->device, dir, b->medium_fstype, MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) != 0)
		return -1;
	msg("mounted %s (%s) on %s read-only", b->device, b->medium_fstype, dir);
	return 0;
}

void stack_print(const struct plan *p, const struct boot *b)
{
	static char line[MAX_LAYERS * 74 + 64];
	size_t used = 0;
	int i, n;

	line[0] = '\0';
	for (i = 0; i < b->nlayers; i++) {
		n = snprintf(line + used, sizeof(line) - used, "%s%s%s", i ? " " : "", b->layer[i].name,
			     b->layer[i].saved ? "(store)" : "");
		if (n < 0 || (size_t)n >= sizeof(line) - used)
			break;
		used += (size_t)n;
	}
	msg("stack, bottom to top (%d layer(s)%s%s): %s", b->nlayers,
	    p->verify_mode == VERIFY_ON ? ", dm-verity" : ", unverified",
	    p->verify_mode == VERIFY_ON && b->nsaved ? ", not the store's" : "", line);
}

int stack_mount_layer(const struct plan *p, struct layer *l)
{
	char dev[32];
	struct stat st;
	int lfd;

	if (stat(l->file, &st) != 0)
		return fail(errno, "stat %s", l->file);
	l->bytes = (unsigned long long)st.st_size;
	if (mkdir_p(l->dir, 0755) != 0)
		return -1;
	/* A retry from the rescue shell: what an earlier try mounted here goes first (its loop and
	 * dm-verity devices with it), so each layer is set up once. Not mounted: EINVAL, nothing to do. */
	if (umount(l->dir) == 0)
		msg("layer %s: unmounted %s left by an earlier try", l->name, l->dir);
	lfd = loop_attach(l->file, true, 0, 0, &l->loop);
	if (lfd < 0)
		return -1;
	/* the loop fd stays open until the mount (or dm-verity) holds the device: autoclear. A saved layer
	 * has no root hash (the boot menu was made before it): it is mounted from its loop device, unless it
	 * carries a signature (layers_add_saved gave it a hash tree). */
	if ((l->saved && !l->hash_file[0] ? path_fmt(dev, sizeof(dev), "/dev/loop%d", l->loop) :
					    verity_layer(p, l, dev, sizeof(dev))) != 0 ||
	    (p->check && verity_check(l, dev) != 0)) {
		if (close(lfd) != 0)
			msg("close /dev/loop%d: %s", l->loop, strerror(errno));
		return -1;
	}
	if (mount(dev, l->dir, "squashfs", MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) != 0) {
		int err2 = errno;

		/* autoclear detaches the loop device on this close */
		if (close(lfd) != 0)
			msg("close %s: %s", dev, strerror(errno));
		l->loop = -1;
		return fail(err2, "mount squashfs %s on %s", l->file, l->dir);
	}
	if (close(lfd) != 0)
		return fail(errno, "close %s", dev);
	msg("layer %s: %s on %s via %s (%llu bytes)", l->name, l->file, l->dir, dev, l->bytes);
	return 0;
}

/* ./build.sh layer writes usr/lib/extension-release.d/extension-release.NAME into a layer with the root hash of the
 * 10-base it was built for (LIVEUNION_BASE=, beside sysext's ID=): a layer made for another base may miss the
 * libraries its programs need, or hide newer ones, so it is said; it is not refused (a base updated for a security
 * fix keeps its layers working more often than not). A verified base only: an unverified one has no hash. */
void stack_base_check(const struct boot *b, const struct layer *l)
{
	char path[PATH_LEN], buf[4096];
	const char *base = NULL, *at;
	ssize_t n;
	size_t len;
	int fd, i;

	for (i = 0; i < b->nlayers && !base; i++)
		if (strcmp(b->layer[i].name, "10-base") == 0 && b->layer[i].root_hash[0])
			base = b->layer[i].root_hash;
	if (!base || l == &b->layer[0] ||
	    path_fmt(path, sizeof(path), "%s/usr/lib/extension-release.d/extension-release.%s", l->dir, l->name) != 0)
		return;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return; /* a layer not made by ./build.sh layer: nothing said about its base */
	n = read(fd, buf, sizeof(buf) - 1);
	if (close(fd) != 0 || n < 0) {
		msg("layer %s: read %s: %s", l->name, path, strerror(errno));
		return;
	}
	buf[n] = '\0';
	for (at = buf; at && strncmp(at, "LIVEUNION_BASE=", 15) != 0; at = strchr(at, '\n'), at = at ? at + 1 : NULL)
		;
	if (!at)
		return;
	at += 15;
	len = strcspn(at, "\n");
	if (len != strlen(base) || strncmp(at, base, len) != 0)
		msg("WARNING: layer %s was built for another 10-base (root hash %.16s..., this one %.16s...): its programs "
		    "may miss what they need from the base; build it again for this one (./build.sh layer)",
		    l->name, at, base);
}

int stack_layers(const struct plan *p, struct boot *b)
{
	static char names[MAX_LAYERS * 4][DIR_NAME_LEN];
	const char *list[MAX_LAYERS * 4];
	char live[PATH_LEN + 16], err[300];
	int n, i;

	if (snprintf(live, sizeof(live), "%s/" LIVE_MEDIUM "/live", p->run_live) >= (int)sizeof(live))
		return fail(ENAMETOOLONG, "layer directory under %s", p->run_live);
	if ((n = dir_names(live, names, list, MAX_LAYERS * 4)) < 0)
		return -1;
	if (layers_choose(p, b, list, n, err, sizeof(err)) < 0)
		return fail(ENOENT, "choose layers in %s: %s", live, err);
	if (b->layers_excluded[0])
		msg("live.layers=%s leaves out: %s", p->layers_wanted, b->layers_excluded);
	if (p->verify_mode == VERIFY_OFF)
		msg("WARNING: live.verify=off: the layers are not verified; a damaged or altered medium is read as it is");
	else if (p->verify_mode == VERIFY_NONE)
		msg("WARNING: no live.verify= root hashes on the command line: the layers are not verified");
	if (p->check && p->verify_mode != VERIFY_ON)
		msg("live.check without dm-verity finds unreadable blocks only, not altered ones");
	for (i = 0; i < b->nlayers; i++)
		if (stack_mount_layer(p, &b->layer[i]) != 0)
			return -1;
	for (i = 1; i < b->nlayers; i++)
		stack_base_check(b, &b->layer[i]);
	text_fmt(b->verify_result, sizeof(b->verify_result), "%s",
		 p->verify_mode == VERIFY_ON ? "every layer through dm-verity" : "not verified");
	if (p->check)
		text_fmt(b->check_result, sizeof(b->check_result), "passed: %d layer(s) read in full", b->nlayers);
	stack_print(p, b);
	return 0;
}

int stack_upper(const struct plan *p)
{
	char dir[PATH_LEN + 16], sub[PATH_LEN + 32], opts[64];

	if (snprintf(dir, sizeof(dir), "%s/" LIVE_UPPER, p->run_live) >= (int)sizeof(dir))
		return fail(ENAMETOOLONG, "upper under %s", p->run_live);
	if (mkdir_p(dir, 0755) != 0)
		return -1;
	if (path_fmt(opts, sizeof(opts), "size=%llu,mode=0755", p->upper_bytes) != 0)
		return -1;
	if (do_mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) != 0)
		return -1;
	if (path_fmt(sub, sizeof(sub), "%s/" STORE_UPPER, dir) != 0)
		return -1;
	if (mkdir(sub, 0755) != 0)
		return fail(errno, "mkdir %s", sub);
	if (path_fmt(sub, sizeof(sub), "%s/" STORE_WORK, dir) != 0)
		return -1;
	if (mkdir(sub, 0755) != 0)
		return fail(errno, "mkdir %s", sub);
	msg("changes go to a tmpfs of %llu MiB at %s", p->upper_bytes >> 20, dir);
	return 0;
}

/*
 * With the tmpfs upper (no store, or only live.persist.paths in the store) the lower layers cannot change under
 * the upper, which lives for one boot: index (hard links stay one inode across copy-up; needs a UUID on every
 * lower, kernel/patches/0003 for squashfs) and redirect_dir (rename(2) of merged directories) are safe there.
 * A store keeps both off: its upper outlives the image, and a new ISO under an index would refuse to mount
 * (the upper root's origin no longer matches) and a redirect would point into a tree that changed.
 */
static bool upper_is_volatile(const struct boot *b)
{
	return strcmp(b->upper_kind, "tmpfs") == 0;
}

/* The new mount API: no one-page limit on the lowerdir list, and the kernel says why it refused. */
static int overlay_fsopen(const struct plan *p, const struct boot *b, const char *upper, const char *work,
			  int *fallback)
{
	char why[512];
	int fs, mnt, i;
	ssize_t n;

	*fallback = 0;
	fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0) {
		*fallback = errno == ENOSYS;
		return fail(errno, "fsopen overlay");
	}
	for (i = b->nlayers - 1; i >= 0; i--)
		if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir+", b->layer[i].dir, 0) != 0) {
			/* "lowerdir+" is 6.8+; older kernels take the option string */
			*fallback = errno == EINVAL;
			goto out;
		}
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) != 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "workdir", work, 0) != 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "xino", "on", 0) != 0 ||
	    (upper_is_volatile(b) && (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "index", "on", 0) != 0 ||
				      syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "redirect_dir", "on", 0) != 0)) ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		goto out;
	mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0);
	if (mnt < 0)
		goto out;
	if (syscall(SYS_move_mount, mnt, "", AT_FDCWD, p->newroot, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
		int e = errno;

		if (close(mnt) != 0 || close(fs) != 0)
			msg("close overlay fds: %s", strerror(errno));
		return fail(e, "move the overlay mount onto %s", p->newroot);
	}
	if (close(mnt) != 0 || close(fs) != 0)
		return fail(errno, "close overlay fds");
	return 0;
out:
	i = errno;
	/* The kernel's own explanation, e.g. "e overlayfs: failed to resolve '...'" */
	n = read(fs, why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = '\0';
	if (n > 0 && why[n - 1] == '\n')
		why[n - 1] = '\0';
	if (close(fs) != 0)
		msg("close overlay fs context: %s", strerror(errno));
	return fail(i, "mount overlay on %s%s%s", p->newroot, n > 0 ? " (kernel: " : "", n > 0 ? why : "");
}

/* mount(2) copies one page of options: the layers are named relative to their common directory
 * (run_live/layers, the working directory during the call), which fits a few hundred of them. */
static int overlay_legacy(const struct plan *p, const struct boot *b, const char *upper, const char *work)
{
	static char opts[4096];
	char layers[PATH_LEN + 16];
	size_t used;
	int i, n, rc;

	if (path_fmt(layers, sizeof(layers), "%s/" LIVE_LAYERS, p->run_live) != 0)
		return -1;
	n = snprintf(opts, sizeof(opts), "lowerdir=");
	used = (size_t)n;
	for (i = b->nlayers - 1; i >= 0; i--) {
		n = snprintf(opts + used, sizeof(opts) - used, "%s%s", i == b->nlayers - 1 ? "" : ":",
			     b->layer[i].name);
		if (n < 0 || (size_t)n >= sizeof(opts) - used)
			return fail(E2BIG, "overlay options longer than one page (%d layers)", b->nlayers);
		used += (size_t)n;
	}
	n = snprintf(opts + used, sizeof(opts) - used, ",upperdir=%s,workdir=%s,xino=on%s", upper, work,
		     upper_is_volatile(b) ? ",index=on,redirect_dir=on" : "");
	if (n < 0 || (size_t)n >= sizeof(opts) - used)
		return fail(E2BIG, "overlay options longer than one page (%d layers)", b->nlayers);
	if (chdir(layers) != 0)
		return fail(errno, "chdir %s (the overlay lower layers are named from there)", layers);
	rc = do_mount("overlay", p->newroot, "overlay", 0, opts);
	if (chdir("/") != 0 && rc == 0)
		return fail(errno, "chdir /");
	return rc;
}

int stack_overlay(const struct plan *p, const struct boot *b)
{
	char upper[PATH_LEN + 32], work[PATH_LEN + 32];
	int fallback = 0, i;

	if (b->nlayers == 0)
		return fail(ENOENT, "mount overlay on %s: no layers", p->newroot);
	if (path_fmt(upper, sizeof(upper), "%s/" LIVE_UPPER "/" STORE_UPPER, p->run_live) != 0 ||
	    path_fmt(work, sizeof(work), "%s/" LIVE_UPPER "/" STORE_WORK, p->run_live) != 0)
		return -1;
	if (mkdir_p(p->newroot, 0755) != 0)
		return -1;
	if (overlay_fsopen(p, b, upper, work, &fallback) != 0) {
		if (!fallback)
			return -1;
		dbg("new mount API refused (%s): using mount(2)", strerror(fail_errno()));
		if (overlay_legacy(p, b, upper, work) != 0)
			return -1;
	}
	msg("overlay on %s (xino=on, %s): upper %s, lower (top first):", p->newroot,
	    upper_is_volatile(b) ? "index=on, redirect_dir=on: tmpfs upper" : "index and redirect_dir off: store upper",
	    upper);
	for (i = b->nlayers - 1; i >= 0; i--)
		msg("  %s", b->layer[i].dir);
	return 0;
}

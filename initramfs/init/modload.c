/* Module loading for the pc flavour: the index, a module and what it needs, the overlay and squashfs modules, the
 * preload list (devices that ask for modules: coldplug.c). Nothing here stops the boot: a module that fails is named
 * with its errno, and the step that needed its device reports the rest. */
#include "modload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/module.h>

#include "log.h"
#include "util.h"

#define OUR_OVERLAY "/lib/liveunion/overlay.ko"
#define OUR_SQUASHFS "/lib/liveunion/squashfs.ko"
#define PRELOAD "/etc/liveunion-modules.preload"
#define MAX_ORDER 64

const char *modload_flavour(const struct modload *m)
{
	return m && m->active ? "pc" : "tiny";
}

const char *modload_overlay(const struct modload *m)
{
	return m ? m->overlay_what : "built-in";
}

/* The whole file, NUL-terminated, malloc'd; NULL with errno. */
static char *slurp(const char *path)
{
	struct stat st;
	char *buf;
	size_t used = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !(buf = malloc((size_t)st.st_size + 1))) {
		e = errno;
		if (close(fd) != 0) {
			/* the first error is the one to report */
		}
		errno = e;
		return NULL;
	}
	while (used < (size_t)st.st_size && (n = read(fd, buf + used, (size_t)st.st_size - used)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			free(buf);
			if (close(fd) != 0) {
				/* the read error is the one to report */
			}
			errno = e;
			return NULL;
		}
		used += (size_t)n;
	}
	buf[used] = '\0';
	if (close(fd) != 0) {
		e = errno;
		free(buf);
		errno = e;
		return NULL;
	}
	return buf;
}

/* finit_module on a file, with the options the command line gives module name; 0 or an errno (EEXIST counts
 * as loaded). */
static int finit_path(const struct modload *m, const char *path, const char *name, int flags)
{
	char opts[512];
	int fd, e = 0;

	if (mod_options(m->cmdline, name, opts, sizeof(opts)) != 0)
		msg("module %s: its options on the command line are longer than %zu bytes; those past it are left out",
		    name, sizeof(opts) - 1);
	if (opts[0])
		dbg("module %s: options from the command line: %s", name, opts);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (syscall(SYS_finit_module, fd, opts, flags) != 0 && errno != EEXIST)
		e = errno;
	if (close(fd) != 0 && e == 0)
		e = errno;
	return e;
}

/* Module mod and what it needs; why names the device or reason. 0 when all of them are in. */
int modload_load(struct modload *m, int mod, const char *why)
{
	int order[MAX_ORDER], n = mod_load_order(&m->ix, mod, order, MAX_ORDER), i;

	if (n < 0) {
		msg("module %s (for %s): its dependencies in modules.dep are circular or too many; not loaded",
		    m->ix.entry[mod].name, why);
		m->state[mod] = M_FAILED;
		return -1;
	}
	for (i = 0; i < n; i++) {
		int k = order[i], e;
		char path[600];

		if (m->state[k] == M_LOADED)
			continue;
		if (m->state[k] == M_FAILED)
			return -1;
		if (snprintf(path, sizeof(path), "%s/%s", m->moddir, m->ix.entry[k].path) >= (int)sizeof(path)) {
			e = ENAMETOOLONG;
		} else {
			e = finit_path(m, path, m->ix.entry[k].name,
				       mod_compressed(path) ? MODULE_INIT_COMPRESSED_FILE : 0);
		}
		if (e != 0) {
			msg("module %s (for %s) failed to load: %s; the boot goes on without it", m->ix.entry[k].name,
			    why, strerror(e));
			m->state[k] = M_FAILED;
			m->fail_errno_of[k] = e;
			return -1;
		}
		m->state[k] = M_LOADED;
	}
	return 0;
}

/* Ours carries kernel/patches; the kernel's own is the fallback when ours is refused (Secure Boot lockdown
 * without our key enrolled: EPERM, EKEYREJECTED). what (may be NULL) says which one runs. */
static void load_ours(struct modload *ml, const char *name, const char *fs, const char *ours, const char *without,
		      char *what, size_t wlen)
{
	int m = mod_find(&ml->ix, name), e;
	char dummy[8];

	if (!what) {
		what = dummy;
		wlen = sizeof(dummy);
	}
	e = finit_path(ml, ours, name, 0);
	if (e == 0) {
		snprintf(what, wlen, "ours (%s)", ours);
		msg("%s: loaded our %s.ko (%s, with kernel/patches)", fs, name, ours);
		if (m >= 0)
			ml->state[m] = M_LOADED; /* the kernel's own must not be loaded on top */
		return;
	}
	msg("WARNING: our %s.ko was refused (%s): using the kernel's own %s module; without our patch %s", name,
	    strerror(e), name, without);
	if (m < 0) {
		msg("%s: the initramfs has no kernel %s module either; mounting it will fail", fs, name);
		snprintf(what, wlen, "none (ours refused: %s)", strerror(e));
		return;
	}
	if (modload_load(ml, m, fs) == 0) {
		snprintf(what, wlen, "kernel's %s (ours refused: %s)", ml->ix.entry[m].path, strerror(e));
		msg("%s: loaded the kernel's %s", fs, ml->ix.entry[m].path);
	} else {
		snprintf(what, wlen, "none (ours refused: %s; the kernel's failed: %s)", strerror(e),
			 strerror(ml->fail_errno_of[m]));
	}
}

/* Modules no device asks for: file systems, loop, dm-verity, code pages (the kernel's own request_module
 * finds no modprobe in the initramfs). */
static void preload(struct modload *ml)
{
	char *list = slurp(PRELOAD), *line, *save = NULL;

	if (!list) {
		msg("module preload list %s: %s", PRELOAD, strerror(errno));
		return;
	}
	for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int m = mod_find(&ml->ix, line);

		if (m < 0)
			msg("module %s (preload): not in %s/modules.dep", line, ml->moddir);
		else
			modload_load(ml, m, "preload");
	}
	free(list);
}

void modload_start(struct modload *m, const char *kernel_cmdline, bool devices)
{
	struct utsname u;
	char path[400], err[200];

	memset(m, 0, sizeof(*m));
	m->nl = -1;
	m->cmdline = "";
	snprintf(m->overlay_what, sizeof(m->overlay_what), "built-in");
	if (uname(&u) != 0 ||
	    snprintf(m->moddir, sizeof(m->moddir), "/lib/modules/%s", u.release) >= (int)sizeof(m->moddir))
		return;
	if (snprintf(path, sizeof(path), "%s/modules.dep", m->moddir) >= (int)sizeof(path) || access(path, F_OK) != 0) {
		dbg("no %s: a kernel with its drivers built in", path);
		return;
	}
	m->dep_text = slurp(path);
	if (snprintf(path, sizeof(path), "%s/modules.alias", m->moddir) >= (int)sizeof(path) || !m->dep_text ||
	    !(m->alias_text = slurp(path))) {
		msg("modules: cannot read %s: %s; no driver will be loaded", path, strerror(errno));
		return;
	}
	if (mod_index_parse(&m->ix, m->alias_text, m->dep_text, err, sizeof(err)) != 0) {
		msg("modules: %s; no driver will be loaded", err);
		return;
	}
	m->state = calloc((size_t)m->ix.nentry + 1, 1);
	m->fail_errno_of = calloc((size_t)m->ix.nentry + 1, sizeof(int));
	if (!m->state || !m->fail_errno_of) {
		msg("modules: out of memory; no driver will be loaded");
		return;
	}
	m->active = true;
	m->cmdline = kernel_cmdline;
	msg("modules: %d in the initramfs for kernel %s, %d aliases%s", m->ix.nentry, u.release, m->ix.nalias,
	    devices ? "" : "; device drivers are the caller's (udev)");
	if (devices)
		uevent_open(m);
	load_ours(m, "overlay", "overlayfs", OUR_OVERLAY, "NAME_MAX on / is 256, not 255", m->overlay_what,
		  sizeof(m->overlay_what));
	load_ours(
		m, "squashfs", "squashfs", OUR_SQUASHFS,
		"squashfs layers have no UUID, so overlayfs keeps no copy-up origins and no index with several of them",
		NULL, 0);
	preload(m);
	if (!devices)
		return;
	coldplug(m);
	drain_uevents(m);
}

/* Module loading for the pc flavour: coldplug, uevents, the overlay module. Nothing here stops the boot:
 * a module that fails is named with its errno, and the step that needed its device reports the rest. */
#include "modload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/module.h>
#include <linux/netlink.h>

#include "log.h"
#include "modalias.h"
#include "util.h"

#define OUR_OVERLAY "/lib/liveunion/overlay.ko"
#define OUR_SQUASHFS "/lib/liveunion/squashfs.ko"
#define PRELOAD "/etc/liveunion-modules.preload"
#define MAX_MATCH 16
#define MAX_ORDER 64
#define SYS_DEVICES "/sys/devices"

enum { M_NEW, M_LOADED, M_FAILED };

static struct mod_index ix;
static char *alias_text, *dep_text;
static unsigned char *state;
static int *fail_errno_of;
static int active, nl = -1;
static char moddir[300];
static char overlay_what[200] = "built-in";
static const char *cmdline = "";

const char *modload_flavour(void)
{
	return active ? "pc" : "tiny";
}

const char *modload_overlay(void)
{
	return overlay_what;
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
static int finit_path(const char *path, const char *name, int flags)
{
	char opts[512];
	int fd, e = 0;

	if (mod_options(cmdline, name, opts, sizeof(opts)) != 0)
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

/* m and what it needs; why names the device or reason. 0 when all of them are in. */
static int load(int m, const char *why)
{
	int order[MAX_ORDER], n = mod_load_order(&ix, m, order, MAX_ORDER), i;

	if (n < 0) {
		msg("module %s (for %s): its dependencies in modules.dep are circular or too many; not loaded",
		    ix.entry[m].name, why);
		state[m] = M_FAILED;
		return -1;
	}
	for (i = 0; i < n; i++) {
		int k = order[i], e;
		char path[600];

		if (state[k] == M_LOADED)
			continue;
		if (state[k] == M_FAILED)
			return -1;
		if (snprintf(path, sizeof(path), "%s/%s", moddir, ix.entry[k].path) >= (int)sizeof(path)) {
			e = ENAMETOOLONG;
		} else {
			e = finit_path(path, ix.entry[k].name, mod_compressed(path) ? MODULE_INIT_COMPRESSED_FILE : 0);
		}
		if (e != 0) {
			msg("module %s (for %s) failed to load: %s; the boot goes on without it", ix.entry[k].name, why,
			    strerror(e));
			state[k] = M_FAILED;
			fail_errno_of[k] = e;
			return -1;
		}
		state[k] = M_LOADED;
	}
	return 0;
}

/* The modules a modalias asks for; with live.debug, which ones a device pulled in. */
static void handle_alias(const char *dev, const char *alias)
{
	int match[MAX_MATCH], n = mod_match(&ix, alias, match, MAX_MATCH), i, fresh = 0;
	char names[300] = "";
	size_t used = 0;

	for (i = 0; i < n; i++) {
		fresh |= state[match[i]] == M_NEW;
		if (load(match[i], dev) == 0 && used < sizeof(names)) {
			int w = snprintf(names + used, sizeof(names) - used, "%s%s", used ? "," : "",
					 ix.entry[match[i]].name);

			used += w > 0 ? (size_t)w : 0;
		}
	}
	if (fresh && used)
		dbg("%s (%s) -> %s", dev, alias, names);
}

static void drain_uevents(void);

/* The one sysfs walker: fn(device path below /sys/devices, its modalias, whether a driver is bound) for every
 * device below path that has a modalias; bound is looked up only when ask_bound (else false: coldplug needs no
 * readlink per device). depth bounds a sysfs loop that cannot happen but must not hang PID 1. */
typedef void (*device_fn)(const char *dev, const char *alias, bool bound);

static void walk_devices(char *path, size_t len, int depth, bool ask_bound, device_fn fn)
{
	DIR *d;
	struct dirent *e;
	size_t base = strlen(path);

	if (depth > 24 || !(d = opendir(path)))
		return;
	while ((e = readdir(d)) != NULL) {
		char alias[512], drv[8];
		ssize_t r = -1, n;
		int fd;

		if (e->d_name[0] == '.' || base + strlen(e->d_name) + 12 > len)
			continue;
		if (e->d_type == DT_DIR) {
			snprintf(path + base, len - base, "/%s", e->d_name);
			walk_devices(path, len, depth + 1, ask_bound, fn);
			path[base] = '\0';
			continue;
		}
		if (e->d_type != DT_REG || strcmp(e->d_name, "modalias") != 0)
			continue;
		if (ask_bound) {
			snprintf(path + base, len - base, "/driver");
			r = readlink(path, drv, sizeof(drv));
		}
		snprintf(path + base, len - base, "/modalias");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		path[base] = '\0';
		if (fd < 0)
			continue;
		n = read(fd, alias, sizeof(alias) - 1);
		if (close(fd) != 0 || n <= 0)
			continue;
		alias[n] = '\0';
		alias[strcspn(alias, "\n")] = '\0';
		if (alias[0])
			fn(path + sizeof(SYS_DEVICES), alias, r >= 0);
	}
	if (closedir(d) != 0)
		dbg("close %s: %s", path, strerror(errno));
}

static void coldplug_one(const char *dev, const char *alias, bool bound)
{
	(void)bound; /* as udev does: every device, bound or not; what is loaded already is not loaded again */
	handle_alias(dev, alias);
}

static void coldplug(void)
{
	static char path[1024];

	snprintf(path, sizeof(path), "%s", SYS_DEVICES);
	walk_devices(path, sizeof(path), 0, false, coldplug_one);
}

/* Read every queued uevent; an "add" with MODALIAS= is handled like a coldplugged device. A full socket
 * buffer (ENOBUFS) lost some: a coldplug pass finds them again. */
static void drain_uevents(void)
{
	static char buf[8192];
	ssize_t n;
	int lost = 0;

	while (nl >= 0) {
		const char *p, *end, *action = NULL, *devpath = "?", *alias = NULL;

		n = recv(nl, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOBUFS) {
			lost = 1;
			continue;
		}
		if (n <= 0)
			break;
		buf[n] = '\0';
		for (p = buf, end = buf + n; p < end; p += strlen(p) + 1) {
			if (strncmp(p, "ACTION=", 7) == 0)
				action = p + 7;
			else if (strncmp(p, "DEVPATH=", 8) == 0)
				devpath = p + 8;
			else if (strncmp(p, "MODALIAS=", 9) == 0)
				alias = p + 9;
		}
		if (action && alias && (strcmp(action, "add") == 0 || strcmp(action, "change") == 0))
			handle_alias(devpath + (strncmp(devpath, "/devices/", 9) == 0 ? 9 : 0), alias);
	}
	if (lost) {
		dbg("uevents were lost (socket buffer full): coldplug again");
		coldplug();
	}
}

void modload_poll(void)
{
	/* Loading a host controller announces its disks: follow the chain until it is quiet. */
	if (active)
		drain_uevents();
}

void modload_wait(long ms)
{
	sleep_ms(ms);
	modload_poll();
}

static void uevent_open(void)
{
	struct sockaddr_nl sa;
	int size = 4 << 20;

	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (nl < 0) {
		msg("uevent socket: %s; only devices present now get their modules", strerror(errno));
		return;
	}
	/* A controller with many devices floods it; a lost event is found again by the coldplug ENOBUFS triggers. */
	if (setsockopt(nl, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
		dbg("uevent socket buffer: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = 1; /* the kernel's own uevents (udev's are group 2) */
	if (bind(nl, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		msg("uevent socket bind: %s; only devices present now get their modules", strerror(errno));
		if (close(nl) != 0)
			dbg("close uevent socket: %s", strerror(errno));
		nl = -1;
	}
}

/* Ours carries kernel/patches; the kernel's own is the fallback when ours is refused (Secure Boot lockdown
 * without our key enrolled: EPERM, EKEYREJECTED). what (may be NULL) says which one runs. */
static void load_ours(const char *name, const char *fs, const char *ours, const char *without, char *what, size_t wlen)
{
	int m = mod_find(&ix, name), e;
	char dummy[8];

	if (!what) {
		what = dummy;
		wlen = sizeof(dummy);
	}
	e = finit_path(ours, name, 0);
	if (e == 0) {
		snprintf(what, wlen, "ours (%s)", ours);
		msg("%s: loaded our %s.ko (%s, with kernel/patches)", fs, name, ours);
		if (m >= 0)
			state[m] = M_LOADED; /* the kernel's own must not be loaded on top */
		return;
	}
	msg("WARNING: our %s.ko was refused (%s): using the kernel's own %s module; without our patch %s", name,
	    strerror(e), name, without);
	if (m < 0) {
		msg("%s: the initramfs has no kernel %s module either; mounting it will fail", fs, name);
		snprintf(what, wlen, "none (ours refused: %s)", strerror(e));
		return;
	}
	if (load(m, fs) == 0) {
		snprintf(what, wlen, "kernel's %s (ours refused: %s)", ix.entry[m].path, strerror(e));
		msg("%s: loaded the kernel's %s", fs, ix.entry[m].path);
	} else {
		snprintf(what, wlen, "none (ours refused: %s; the kernel's failed: %s)", strerror(e),
			 strerror(fail_errno_of[m]));
	}
}

/* Modules no device asks for: file systems, loop, dm-verity, code pages (the kernel's own request_module
 * finds no modprobe in the initramfs). */
static void preload(void)
{
	char *list = slurp(PRELOAD), *line, *save = NULL;

	if (!list) {
		msg("module preload list %s: %s", PRELOAD, strerror(errno));
		return;
	}
	for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int m = mod_find(&ix, line);

		if (m < 0)
			msg("module %s (preload): not in %s/modules.dep", line, moddir);
		else
			load(m, "preload");
	}
	free(list);
}

void modload_start(const char *kernel_cmdline, bool devices)
{
	struct utsname u;
	char path[400], err[200];

	if (uname(&u) != 0 || snprintf(moddir, sizeof(moddir), "/lib/modules/%s", u.release) >= (int)sizeof(moddir))
		return;
	if (snprintf(path, sizeof(path), "%s/modules.dep", moddir) >= (int)sizeof(path) || access(path, F_OK) != 0) {
		dbg("no %s: a kernel with its drivers built in", path);
		return;
	}
	dep_text = slurp(path);
	if (snprintf(path, sizeof(path), "%s/modules.alias", moddir) >= (int)sizeof(path) || !dep_text ||
	    !(alias_text = slurp(path))) {
		msg("modules: cannot read %s: %s; no driver will be loaded", path, strerror(errno));
		return;
	}
	if (mod_index_parse(&ix, alias_text, dep_text, err, sizeof(err)) != 0) {
		msg("modules: %s; no driver will be loaded", err);
		return;
	}
	state = calloc((size_t)ix.nentry + 1, 1);
	fail_errno_of = calloc((size_t)ix.nentry + 1, sizeof(int));
	if (!state || !fail_errno_of) {
		msg("modules: out of memory; no driver will be loaded");
		return;
	}
	active = 1;
	cmdline = kernel_cmdline;
	msg("modules: %d in the initramfs for kernel %s, %d aliases%s", ix.nentry, u.release, ix.nalias,
	    devices ? "" : "; device drivers are the caller's (udev)");
	if (devices)
		uevent_open();
	load_ours("overlay", "overlayfs", OUR_OVERLAY, "NAME_MAX on / is 256, not 255", overlay_what,
		  sizeof(overlay_what));
	load_ours(
		"squashfs", "squashfs", OUR_SQUASHFS,
		"squashfs layers have no UUID, so overlayfs keeps no copy-up origins and no index with several of them",
		NULL, 0);
	preload();
	if (!devices)
		return;
	coldplug();
	drain_uevents();
}

/* Why no driver took a device: what its modalias matched and what became of it. */
static void unbound_one(const char *dev, const char *alias, bool bound)
{
	char why[300];
	int match[MAX_MATCH], n, i;

	if (bound)
		return;
	/* the buses a boot disk hangs off; the rest (ACPI, CPU, platform) is noise here, and so are PCI
	 * bridges (class 06): host and ISA bridges never have a driver, PCIe ports have a built-in one */
	if (strncmp(alias, "pci:", 4) && strncmp(alias, "usb:", 4) && strncmp(alias, "virtio:", 7) &&
	    strncmp(alias, "scsi:", 5) && strncmp(alias, "mmc:", 4) && strncmp(alias, "sdio:", 5))
		return;
	if (strncmp(alias, "pci:", 4) == 0 && strstr(alias, "bc06sc"))
		return;
	n = mod_match(&ix, alias, match, MAX_MATCH);
	if (n == 0) {
		snprintf(why, sizeof(why), "no module in the initramfs for it");
	} else {
		size_t used = 0;

		for (i = 0; i < n && used < sizeof(why); i++) {
			int w = snprintf(why + used, sizeof(why) - used, "%s%s %s", i ? "; " : "",
					 ix.entry[match[i]].name,
					 state[match[i]] == M_FAILED ? strerror(fail_errno_of[match[i]]) :
					 state[match[i]] == M_LOADED ? "loaded, did not take it" :
								       "not loaded");
			used += w > 0 ? (size_t)w : 0;
		}
	}
	msg("  %s (%s): %s", dev, alias, why);
}

void modload_report_unbound(void)
{
	static char path[1024];

	if (!active)
		return;
	msg("devices with no driver (pci, usb, virtio, scsi, mmc):");
	snprintf(path, sizeof(path), "%s", SYS_DEVICES);
	walk_devices(path, sizeof(path), 0, true, unbound_one);
}

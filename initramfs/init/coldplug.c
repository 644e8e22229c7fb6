/* Devices that ask for modules (the pc flavour): the walk of /sys/devices at the start (coldplug), the kernel's
 * uevents after it (every wait for a device polls them), and the report of the devices no driver took. The modules
 * themselves are loaded by modload.c. */
#include "modload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include "log.h"
#include "util.h"

#define MAX_MATCH 16
#define SYS_DEVICES "/sys/devices"

/* The modules a modalias asks for; with live.debug, which ones a device pulled in. */
static void handle_alias(struct modload *m, const char *dev, const char *alias)
{
	int match[MAX_MATCH], n = mod_match(&m->ix, alias, match, MAX_MATCH), i, fresh = 0;
	char names[300] = "";
	size_t used = 0;

	for (i = 0; i < n; i++) {
		fresh |= m->state[match[i]] == M_NEW;
		if (modload_load(m, match[i], dev) == 0 && used < sizeof(names)) {
			int w = snprintf(names + used, sizeof(names) - used, "%s%s", used ? "," : "",
					 m->ix.entry[match[i]].name);

			used += w > 0 ? (size_t)w : 0;
		}
	}
	if (fresh && used)
		dbg("%s (%s) -> %s", dev, alias, names);
}

/* The one sysfs walker: fn(device path below /sys/devices, its modalias, whether a driver is bound) for every
 * device below path that has a modalias; bound is looked up only when ask_bound (else false: coldplug needs no
 * readlink per device). depth bounds a sysfs loop that cannot happen but must not hang PID 1. */
typedef void (*device_fn)(struct modload *m, const char *dev, const char *alias, bool bound);

static void walk_devices(struct modload *m, char *path, size_t len, int depth, bool ask_bound, device_fn fn)
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
			walk_devices(m, path, len, depth + 1, ask_bound, fn);
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
			fn(m, path + sizeof(SYS_DEVICES), alias, r >= 0);
	}
	if (closedir(d) != 0)
		dbg("close %s: %s", path, strerror(errno));
}

static void coldplug_one(struct modload *m, const char *dev, const char *alias, bool bound)
{
	(void)bound; /* as udev does: every device, bound or not; what is loaded already is not loaded again */
	handle_alias(m, dev, alias);
}

void coldplug(struct modload *m)
{
	static char path[1024];

	snprintf(path, sizeof(path), "%s", SYS_DEVICES);
	walk_devices(m, path, sizeof(path), 0, false, coldplug_one);
}

/* Read every queued uevent; an "add" with MODALIAS= is handled like a coldplugged device. A full socket
 * buffer (ENOBUFS) lost some: a coldplug pass finds them again. */
void drain_uevents(struct modload *m)
{
	static char buf[8192];
	ssize_t n;
	int lost = 0;

	while (m->nl >= 0) {
		const char *p, *end, *action = NULL, *devpath = "?", *alias = NULL;

		n = recv(m->nl, buf, sizeof(buf) - 1, MSG_DONTWAIT);
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
			handle_alias(m, devpath + (strncmp(devpath, "/devices/", 9) == 0 ? 9 : 0), alias);
	}
	if (lost) {
		dbg("uevents were lost (socket buffer full): coldplug again");
		coldplug(m);
	}
}

void modload_poll(struct modload *m)
{
	/* Loading a host controller announces its disks: follow the chain until it is quiet. */
	if (m && m->active)
		drain_uevents(m);
}

void modload_wait(struct modload *m, long ms)
{
	sleep_ms(ms);
	modload_poll(m);
}

void uevent_open(struct modload *m)
{
	struct sockaddr_nl sa;
	int size = 4 << 20;

	m->nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (m->nl < 0) {
		msg("uevent socket: %s; only devices present now get their modules", strerror(errno));
		return;
	}
	/* A controller with many devices floods it; a lost event is found again by the coldplug ENOBUFS triggers. */
	if (setsockopt(m->nl, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
		dbg("uevent socket buffer: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = 1; /* the kernel's own uevents (udev's are group 2) */
	if (bind(m->nl, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		msg("uevent socket bind: %s; only devices present now get their modules", strerror(errno));
		if (close(m->nl) != 0)
			dbg("close uevent socket: %s", strerror(errno));
		m->nl = -1;
	}
}

/* Why no driver took a device: what its modalias matched and what became of it. */
static void unbound_one(struct modload *m, const char *dev, const char *alias, bool bound)
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
	n = mod_match(&m->ix, alias, match, MAX_MATCH);
	if (n == 0) {
		snprintf(why, sizeof(why), "no module in the initramfs for it");
	} else {
		size_t used = 0;

		for (i = 0; i < n && used < sizeof(why); i++) {
			int w = snprintf(why + used, sizeof(why) - used, "%s%s %s", i ? "; " : "",
					 m->ix.entry[match[i]].name,
					 m->state[match[i]] == M_FAILED ? strerror(m->fail_errno_of[match[i]]) :
					 m->state[match[i]] == M_LOADED ? "loaded, did not take it" :
									  "not loaded");
			used += w > 0 ? (size_t)w : 0;
		}
	}
	msg("  %s (%s): %s", dev, alias, why);
}

void modload_report_unbound(struct modload *m)
{
	static char path[1024];

	if (!m || !m->active)
		return;
	msg("devices with no driver (pci, usb, virtio, scsi, mmc):");
	snprintf(path, sizeof(path), "%s", SYS_DEVICES);
	walk_devices(m, path, sizeof(path), 0, true, unbound_one);
}

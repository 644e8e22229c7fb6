#ifndef LIVE_MODLOAD_H
#define LIVE_MODLOAD_H
#include <stdbool.h>
#include <stddef.h>

#include "modalias.h"

/* Kernel modules of the initramfs (the pc flavour): /lib/modules/RELEASE with modules.alias and modules.dep.
 * On a kernel with everything built in (tiny) there is no such directory and all of this does nothing.
 * modload.c loads modules; coldplug.c finds the devices that ask for them. */

/* What modload_start read and loaded: one per boot (struct boot's mods), passed to every call. A NULL one (a host
 * test's boot state) or an inactive one (tiny) loads nothing; modload_wait still waits. */
struct modload {
	struct mod_index ix;
	char *alias_text, *dep_text; /* the index points into them */
	unsigned char *state;        /* per module of ix: M_NEW, M_LOADED, M_FAILED */
	int *fail_errno_of;          /* per module of ix, when M_FAILED */
	bool active;                 /* an index was read: the pc flavour */
	int nl;                      /* the uevent socket, -1 without */
	char moddir[300];            /* /lib/modules/RELEASE */
	char overlay_what[200];      /* which overlay module runs */
	const char *cmdline;         /* the kernel command line: the modules' options */
};
enum { M_NEW, M_LOADED, M_FAILED };

/* Reads the index, loads the overlay and squashfs modules (ours, else the kernel's with a warning) and the
 * preload list; with devices, opens the uevent socket and coldplugs every device under /sys/devices first. The
 * stacker inside another initramfs passes false: that initramfs' udev has loaded (and keeps loading) the device
 * drivers, and a second walk of sysfs only costs time. Failures are reported and the boot goes on.
 * Each module gets the options kernel_cmdline gives it (module.param=value, as modprobe would pass them);
 * the text must stay valid for later modload_poll calls. */
void modload_start(struct modload *m, const char *kernel_cmdline, bool devices);
/* Devices announced since the last call (uevents): their modules are loaded. Never blocks. */
void modload_poll(struct modload *m);
/* The one wait of every loop that waits for a device (medium, store, network interface): ms, then modload_poll. */
void modload_wait(struct modload *m, long ms);
/* After "medium not found": the devices on the buses that lead to a disk that no driver took, and why. */
void modload_report_unbound(struct modload *m);
/* "pc" or "tiny", and which overlay module runs ("ours", "debian (...)", "built-in"), for the plan. */
const char *modload_flavour(const struct modload *m);
const char *modload_overlay(const struct modload *m);

/* Between the two files. modload.c: module mod of the index and what it needs (why names the device or reason);
 * 0 when all of them are in. coldplug.c: the uevent socket opened, every device present coldplugged, the queued
 * uevents drained. */
int modload_load(struct modload *m, int mod, const char *why);
void uevent_open(struct modload *m);
void coldplug(struct modload *m);
void drain_uevents(struct modload *m);
#endif

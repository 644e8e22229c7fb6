#ifndef LIVE_MODLOAD_H
#define LIVE_MODLOAD_H
#include <stdbool.h>
#include <stddef.h>

/* Kernel modules of the initramfs (the pc flavour): /lib/modules/RELEASE with modules.alias and modules.dep.
 * On a kernel with everything built in (tiny) there is no such directory and all of this does nothing. */

/* Reads the index, loads the overlay and squashfs modules (ours, else the kernel's with a warning) and the
 * preload list; with devices, opens the uevent socket and coldplugs every device under /sys/devices first. The
 * stacker inside another initramfs passes false: that initramfs' udev has loaded (and keeps loading) the device
 * drivers, and a second walk of sysfs only costs time. Failures are reported and the boot goes on.
 * Each module gets the options kernel_cmdline gives it (module.param=value, as modprobe would pass them);
 * the text must stay valid for later modload_poll calls. */
void modload_start(const char *kernel_cmdline, bool devices);
/* Devices announced since the last call (uevents): their modules are loaded. Never blocks. */
void modload_poll(void);
/* The one wait of every loop that waits for a device (medium, store, network interface): ms, then modload_poll. */
void modload_wait(long ms);
/* After "medium not found": the devices on the buses that lead to a disk that no driver took, and why. */
void modload_report_unbound(void);
/* "pc" or "tiny", and which overlay module runs ("ours", "debian (...)", "built-in"), for the plan. */
const char *modload_flavour(void);
const char *modload_overlay(void);
#endif

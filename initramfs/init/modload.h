#ifndef LIVE_MODLOAD_H
#define LIVE_MODLOAD_H
#include <stddef.h>

/* Kernel modules of the initramfs (the pc flavour): /lib/modules/RELEASE with modules.alias and modules.dep.
 * On a kernel with everything built in (tiny) there is no such directory and all of this does nothing. */

/* Reads the index, opens the uevent socket, loads the overlay module (ours, else the kernel's with a
 * warning), then coldplugs every device under /sys/devices. Failures are reported and the boot goes on.
 * Each module gets the options kernel_cmdline gives it (module.param=value, as modprobe would pass them);
 * the text must stay valid for later modload_poll calls. */
void modload_start(const char *kernel_cmdline);
/* Devices announced since the last call (uevents): their modules are loaded. Never blocks. */
void modload_poll(void);
/* After "medium not found": the devices on the buses that lead to a disk that no driver took, and why. */
void modload_report_unbound(void);
/* "pc" or "tiny", and which overlay module runs ("ours", "debian (...)", "built-in"), for the plan. */
const char *modload_flavour(void);
const char *modload_overlay(void);
#endif

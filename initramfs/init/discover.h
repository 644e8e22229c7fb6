#ifndef LIVE_DISCOVER_H
#define LIVE_DISCOVER_H
#include "plan.h"

/* Find the medium: coldplug sysblock (/sys/class/block), then poll for new devices until
 * p->timeout. Device nodes are devdir/<name>. Fills b->device and b->id. With live.iso= (p->iso_path),
 * every disk's filesystems are searched for that file instead, mounted read-only on run_live/iso-host, and the ISO
 * in it attached to a loop device (b->device; b->iso_host, iso_fstype). */
int discover_medium(const struct plan *p, struct boot *b, const char *sysblock, const char *devdir);
/* live.iso=: let go of the ISO file's loop device once the ISO is mounted (it stays while mounted). */
void discover_done(void);
#endif

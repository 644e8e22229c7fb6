#ifndef LIVE_DISCOVER_H
#define LIVE_DISCOVER_H
#include "plan.h"

/* Probe one block device: 1 = the wanted medium (id filled), 0 = not it (why in reason). */
int probe_device(const char *dev, const struct medium_want *want, struct iso_id *id, char *reason, size_t rlen);
/* Find the medium: coldplug sysblock (/sys/class/block), then poll for new devices until
 * plan->timeout. Device nodes are devdir/<name>. Fills plan->device and plan->id. */
int discover_medium(struct plan *p, const char *sysblock, const char *devdir);
#endif

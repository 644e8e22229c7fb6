#ifndef LIVE_DISCOVER_H
#define LIVE_DISCOVER_H
#include "plan.h"

/* Find the medium: coldplug sysblock (/sys/class/block), then poll for new devices until
 * plan->timeout. Device nodes are devdir/<name>. Fills plan->device and plan->id. */
int discover_medium(struct plan *p, const char *sysblock, const char *devdir);
#endif

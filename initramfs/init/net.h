#ifndef LIVE_NET_H
#define LIVE_NET_H
#include <stdbool.h>
#include <stddef.h>

#include "netcfg.h"

struct plan;
/* Bring one interface up for the network boot (plan->fetch or plan->nbd): wait for interfaces and carrier, then
 * DHCP (busybox udhcpc) or the static ip=. 0 with plan->net_result filled, or -1 with fail() set and every
 * interface tried listed on the console. */
int net_up(struct plan *p);
#endif

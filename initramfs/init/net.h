#ifndef LIVE_NET_H
#define LIVE_NET_H
#include <stdbool.h>
#include <stddef.h>

#include "netcfg.h"

struct plan;
struct boot;
/* Bring one interface up for the network boot (p->net: live.fetch= or live.nbd=): wait for interfaces and carrier, then
 * DHCP (busybox udhcpc) or the static ip=. 0 with b->net_result filled, or -1 with fail() set and every
 * interface tried listed on the console. */
int net_up(const struct plan *p, struct boot *b);
#endif

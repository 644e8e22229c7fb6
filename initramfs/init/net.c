/* The network of a network boot: interfaces, carrier, DHCP (busybox udhcpc) or a static ip=. */
#include "net.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "log.h"
#include "modload.h"
#include "plan.h"
#include "util.h"

#define SYSNET "/sys/class/net"
#define MAX_IFS 16
/* How long a link may take to report carrier after it is set up (autonegotiation takes 2-3 s on real NICs). */
#define CARRIER_S 8
/* The udhcpc script of the initramfs (initramfs/udhcpc.script): it configures the address, route and DNS. */
#define UDHCPC_SCRIPT "/etc/udhcpc.script"

static int read_line(const char *fmt, const char *name, char *buf, size_t len)
{
	char path[PATH_LEN];
	int n;

	if (path_fmt(path, sizeof(path), fmt, name) != 0 || read_text(path, buf, len) < 0)
		return -1;
	n = (int)strcspn(buf, "\n");
	buf[n] = '\0';
	return 0;
}

/* Ethernet-like interfaces (type 1) other than lo, with their MACs. */
static int list_ifs(struct net_if *ifs, int max)
{
	static char names[MAX_IFS * 2][DIR_NAME_LEN];
	const char *list[MAX_IFS * 2];
	char type[16];
	int n, i, k = 0;

	n = dir_names(SYSNET, names, list, MAX_IFS * 2);
	if (n < 0) {
		fail_clear();
		return 0;
	}
	for (i = 0; i < n && k < max; i++) {
		if (read_line(SYSNET "/%s/type", list[i], type, sizeof(type)) != 0 || strcmp(type, "1") != 0 ||
		    strcmp(list[i], "lo") == 0 || strlen(list[i]) >= sizeof(ifs[k].name))
			continue;
		text_fmt(ifs[k].name, sizeof(ifs[k].name), "%s", list[i]);
		if (read_line(SYSNET "/%s/address", list[i], ifs[k].mac, sizeof(ifs[k].mac)) != 0)
			ifs[k].mac[0] = '\0';
		k++;
	}
	return k;
}

static int busybox(const char *const argv[])
{
	int rc = run_wait(argv);

	if (rc != 0)
		dbg("%s %s %s: exit %d", argv[0], argv[1] ? argv[1] : "", argv[2] ? argv[2] : "", rc);
	return rc;
}

static bool carrier(const char *ifname, int seconds)
{
	char c[8];
	int i;

	for (i = 0; i <= seconds * 10; i++) {
		if (read_line(SYSNET "/%s/carrier", ifname, c, sizeof(c)) == 0 && strcmp(c, "1") == 0)
			return true;
		sleep_ms(100);
	}
	return false;
}

static int write_resolv(const struct net_ip *ip)
{
	char text[128];
	int fd, rc;

	if (!ip->dns0[0] && !ip->dns1[0])
		return 0;
	text_fmt(text, sizeof(text), "%s%s%s%s%s", ip->dns0[0] ? "nameserver " : "", ip->dns0, ip->dns0[0] ? "\n" : "",
		 ip->dns1[0] ? "nameserver " : "", ip->dns1);
	if (ip->dns1[0])
		text_fmt(text + strlen(text), sizeof(text) - strlen(text), "\n");
	fd = open_write("/etc/resolv.conf");
	if (fd < 0)
		return -1;
	rc = write_full(fd, text, strlen(text));
	if (close(fd) != 0 || rc != 0)
		return fail(errno, "write /etc/resolv.conf");
	return 0;
}

/* One interface, up and configured: 0; -1 with why. */
static int try_if(const struct plan *p, struct boot *b, const struct net_if *f, char *why, size_t wlen)
{
	const char *const up[] = {"/bin/ip", "link", "set", "dev", f->name, "up", NULL};
	char addr[160], lease[PATH_LEN];
	int rc;

	if (busybox(up) != 0)
		return text_err(why, wlen, "ip link set up failed");
	if (!carrier(f->name, CARRIER_S))
		return text_err(why, wlen, "no carrier after %d s (cable? switch port?)", CARRIER_S);
	if (!p->ip.dhcp) {
		const char *const add[] = {"/bin/ip", "addr", "add", addr, "dev", f->name, NULL};
		const char *const route[] = {"/bin/ip", "route", "add",   "default", "via",
					     p->ip.gw,  "dev",   f->name, NULL};

		text_fmt(addr, sizeof(addr), "%s/%d", p->ip.client, p->ip.prefix);
		if (busybox(add) != 0)
			return text_err(why, wlen, "ip addr add %s failed", addr);
		if (p->ip.gw[0] && busybox(route) != 0)
			return text_err(why, wlen, "ip route add default via %s failed", p->ip.gw);
		if (write_resolv(&p->ip) != 0) {
			msg("%s: %s", fail_what(), strerror(fail_errno()));
			fail_clear();
		}
		text_fmt(b->net_result, sizeof(b->net_result), "%s (%s): %s static%s%s", f->name, f->mac, addr,
			 p->ip.gw[0] ? ", gateway " : "", p->ip.gw);
		return 0;
	}
	{
		/* -n: give up without a lease (-t discovers, -T s apart); -q: quit once bound, the live root's own
		 * network manager takes over the address; -f: in the foreground, so its exit is the answer. */
		const char *const dhcp[] = {
			"/bin/udhcpc", "-i", f->name, "-f", "-q",          "-n", "-t",
			"5",           "-T", "2",     "-s", UDHCPC_SCRIPT, "-x", "hostname:liveunion",
			NULL};

		msg("network: %s (%s): asking DHCP for an address", f->name, f->mac);
		rc = busybox(dhcp);
		if (rc != 0)
			return text_err(why, wlen, "no DHCP lease (udhcpc exit %d)", rc);
		if (path_fmt(lease, sizeof(lease), LIVE_RUN "/net-%s", f->name) != 0 ||
		    read_text(lease, addr, sizeof(addr)) < 0) {
			fail_clear();
			text_fmt(addr, sizeof(addr), "(address not recorded)");
		}
		addr[strcspn(addr, "\n")] = '\0';
		text_fmt(b->net_result, sizeof(b->net_result), "%s (%s): %s by DHCP", f->name, f->mac, addr);
	}
	return 0;
}

int net_up(const struct plan *p, struct boot *b)
{
	struct net_if ifs[MAX_IFS];
	char why[MAX_IFS][120], all[MAX_IFS * 140] = "";
	const char *const lo[] = {"/bin/ip", "link", "set", "dev", "lo", "up", NULL};
	int n = 0, k, i, waited_ms = 0;

	if (p->ip.off)
		return fail(EINVAL, "network boot (%s) with ip=off: nothing to boot from",
			    p->net == NET_FETCH ? "live.fetch=" : "live.nbd=");
	if (busybox(lo) != 0)
		msg("network: could not set lo up");
	/* Drivers (pc: modules loading now) register their interfaces a moment after the devices appear. The
	 * BOOTIF= one (or ip='s device) is worth waiting for while others are already there. */
	for (;;) {
		n = list_ifs(ifs, MAX_IFS);
		k = net_order(ifs, n, p->ip.device, p->bootif_mac);
		if (k > 0 && (!p->bootif_mac[0] || p->ip.device[0] || strcmp(ifs[0].mac, p->bootif_mac) == 0 ||
			      waited_ms >= 3000))
			break;
		if (waited_ms >= (int)p->timeout * 1000)
			break;
		modload_wait(b->mods, 200);
		waited_ms += 200;
	}
	if (k == 0) {
		if (p->ip.device[0])
			return fail(ENODEV, "network: no interface %s (ip= names it) after %u s; %d other(s) present",
				    p->ip.device, p->timeout, n);
		msg("network: no Ethernet interface after %u s (is the NIC's driver in the kernel or the initramfs?)",
		    p->timeout);
		modload_report_unbound(b->mods);
		return fail(ENODEV, "find a network interface");
	}
	for (i = 0; i < k; i++) {
		if (try_if(p, b, &ifs[i], why[i], sizeof(why[i])) == 0) {
			msg("network: %s", b->net_result);
			return 0;
		}
		msg("network: %s (%s): %s", ifs[i].name, ifs[i].mac, why[i]);
		text_list_add(all, sizeof(all), ifs[i].name, strlen(ifs[i].name));
	}
	return fail(ENETUNREACH, "bring up a network interface (tried: %s; %s)", all,
		    p->ip.dhcp ? "DHCP" : "static ip=");
}

#ifndef LIVE_NETCFG_H
#define LIVE_NETCFG_H
#include <stdbool.h>
#include <stddef.h>

/* ip= as the kernel documents it (Documentation/admin-guide/nfs/nfsroot.rst):
 *   ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>:<dns0-ip>:<dns1-ip>:<ntp0-ip>
 * or one word: dhcp, on, any, both (DHCP), off, none (no network: refused by the network boot). Empty fields
 * keep their defaults; a client address makes the setup static unless autoconf asks for DHCP. */
struct net_ip {
	bool dhcp; /* else static: client and netmask are set */
	bool off;
	char client[16], gw[16], netmask[16], dns0[16], dns1[16];
	char hostname[65];
	char device[16];
	int prefix; /* netmask as a prefix length; static only */
};

/* 0, or -1 with why in err. "" means DHCP on any interface. */
int net_parse_ip(const char *s, struct net_ip *out, char *err, size_t elen);
/* BOOTIF=01-52-54-00-12-34-56 (ARP type 1, then the MAC) -> "52:54:00:12:34:56"; 0, or -1 when malformed. */
int net_parse_bootif(const char *s, char mac[18]);

/* live.fetch='s comma-separated URLs, each http://HOST[:PORT]/PATH, a '/' added at the end when missing; the
 * count, or -1 with why in err. */
#define FETCH_URL_MAX 8
#define FETCH_URL_LEN 256
int fetch_urls(const char *spec, char urls[][FETCH_URL_LEN], int max, char *err, size_t elen);

/* live.nbd=HOST[:PORT]/EXPORT. 0, or -1 with why in err. */
#define NBD_DEFAULT_PORT "10809"
struct nbd_spec {
	char host[128];
	char port[8];
	char export[128];
};
int nbd_spec_parse(const char *s, struct nbd_spec *out, char *err, size_t elen);

struct net_if {
	char name[16];
	char mac[18];
};
/* The order to try interfaces in: the one named by ip='s device field alone; else the one with the BOOTIF= MAC
 * first, then the rest in name order. Sorts ifs in place; returns how many to try. */
int net_order(struct net_if *ifs, int n, const char *device, const char *bootif_mac);
#endif

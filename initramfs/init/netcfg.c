/* Network boot's settings from the command line: ip= and BOOTIF=, and the order interfaces are tried in. Pure. */
#include "netcfg.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

static int valid_ipv4(const char *s)
{
	unsigned parts = 0, v = 0, digits = 0;

	for (;; s++) {
		if (isdigit((unsigned char)*s)) {
			v = v * 10 + (unsigned)(*s - '0');
			if (++digits > 3 || v > 255)
				return -1;
			continue;
		}
		if ((*s != '.' && *s != '\0') || digits == 0)
			return -1;
		parts++;
		if (*s == '\0')
			break;
		v = digits = 0;
	}
	return parts == 4 ? 0 : -1;
}

/* 255.255.255.0 -> 24; -1 when the ones are not contiguous. */
static int mask_prefix(const char *mask)
{
	unsigned a, b, c, d;
	unsigned long m;
	int n = 0;

	if (sscanf(mask, "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
		return -1;
	m = ((unsigned long)a << 24) | ((unsigned long)b << 16) | ((unsigned long)c << 8) | d;
	while (n < 32 && (m & (1UL << (31 - n))))
		n++;
	return (m & ((1UL << (32 - n)) - 1)) == 0 || n == 32 ? n : -1;
}

static int field(char *dst, size_t len, const char *s, size_t n, int ip, const char *what, char *err, size_t elen)
{
	if (n >= len)
		return text_err(err, elen, "ip=: the %s field is longer than %zu characters", what, len - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
	if (ip && n && valid_ipv4(dst) != 0)
		return text_err(err, elen, "ip=: the %s '%s' is not an IPv4 address", what, dst);
	return 0;
}

int net_parse_ip(const char *s, struct net_ip *out, char *err, size_t elen)
{
	static const char *const dhcp_words[] = {"dhcp", "on", "any", "both", "bootp", "rarp", ""};
	char server[16], autoconf[16], ntp[16];
	const char *f[10];
	size_t len[10];
	int nf = 0, i;

	memset(out, 0, sizeof(*out));
	out->dhcp = true;
	if (strcmp(s, "off") == 0 || strcmp(s, "none") == 0) {
		out->off = true;
		return 0;
	}
	for (i = 0; i < (int)(sizeof(dhcp_words) / sizeof(dhcp_words[0])); i++)
		if (strcmp(s, dhcp_words[i]) == 0)
			return 0;
	/* Fields, in order; fewer may be given. */
	f[0] = s;
	for (;;) {
		const char *c = strchr(f[nf], ':');

		len[nf] = c ? (size_t)(c - f[nf]) : strlen(f[nf]);
		nf++;
		if (!c)
			break;
		if (nf == 10)
			return text_err(err, elen, "ip=: more than 10 colon-separated fields");
		f[nf] = c + 1;
	}
	if (field(out->client, sizeof(out->client), f[0], len[0], 1, "client address", err, elen) != 0 ||
	    (nf > 1 && field(server, sizeof(server), f[1], len[1], 1, "server address", err, elen) != 0) ||
	    (nf > 2 && field(out->gw, sizeof(out->gw), f[2], len[2], 1, "gateway", err, elen) != 0) ||
	    (nf > 3 && field(out->netmask, sizeof(out->netmask), f[3], len[3], 1, "netmask", err, elen) != 0) ||
	    (nf > 4 && field(out->hostname, sizeof(out->hostname), f[4], len[4], 0, "hostname", err, elen) != 0) ||
	    (nf > 5 && field(out->device, sizeof(out->device), f[5], len[5], 0, "device", err, elen) != 0) ||
	    (nf > 6 && field(autoconf, sizeof(autoconf), f[6], len[6], 0, "autoconf", err, elen) != 0) ||
	    (nf > 7 && field(out->dns0, sizeof(out->dns0), f[7], len[7], 1, "first DNS server", err, elen) != 0) ||
	    (nf > 8 && field(out->dns1, sizeof(out->dns1), f[8], len[8], 1, "second DNS server", err, elen) != 0) ||
	    (nf > 9 && field(ntp, sizeof(ntp), f[9], len[9], 1, "NTP server", err, elen) != 0))
		return -1;
	if (nf <= 6)
		autoconf[0] = '\0';
	for (i = 0; out->device[i]; i++)
		if (out->device[i] == '/' || isspace((unsigned char)out->device[i]))
			return text_err(err, elen, "ip=: the device '%s' is not an interface name", out->device);
	if (strcmp(autoconf, "off") == 0 || strcmp(autoconf, "none") == 0 || (!autoconf[0] && out->client[0])) {
		if (!out->client[0])
			return text_err(err, elen, "ip=: autoconf %s without a client address", autoconf);
		out->dhcp = false;
		if (!out->netmask[0]) /* the kernel derives it from the address class; a /24 is what people mean */
			memcpy(out->netmask, "255.255.255.0", 14);
		out->prefix = mask_prefix(out->netmask);
		if (out->prefix < 0)
			return text_err(err, elen, "ip=: the netmask %s is not a run of ones", out->netmask);
		return 0;
	}
	for (i = 0; i < (int)(sizeof(dhcp_words) / sizeof(dhcp_words[0])); i++)
		if (strcmp(autoconf, dhcp_words[i]) == 0)
			return 0;
	return text_err(err, elen, "ip=: autoconf '%s' is not dhcp, on, any, both, off or none", autoconf);
}

int net_parse_bootif(const char *s, char mac[18])
{
	int i;

	/* "01-" is the ARP hardware type of Ethernet; then six hex pairs joined by '-' (or ':'). */
	if (strncmp(s, "01-", 3) != 0 || strlen(s) != 20)
		return -1;
	for (i = 0; i < 17; i++) {
		char c = s[3 + i];

		if (i % 3 == 2) {
			if (c != '-' && c != ':')
				return -1;
			mac[i] = ':';
		} else {
			if (!isxdigit((unsigned char)c))
				return -1;
			mac[i] = (char)tolower((unsigned char)c);
		}
	}
	mac[17] = '\0';
	return 0;
}

int net_order(struct net_if *ifs, int n, const char *device, const char *bootif_mac)
{
	int i, j;

	for (i = 1; i < n; i++) /* name order; a handful of entries */
		for (j = i; j > 0 && strcmp(ifs[j - 1].name, ifs[j].name) > 0; j--) {
			struct net_if t = ifs[j];

			ifs[j] = ifs[j - 1];
			ifs[j - 1] = t;
		}
	if (device && device[0]) {
		for (i = 0; i < n; i++)
			if (strcmp(ifs[i].name, device) == 0) {
				ifs[0] = ifs[i];
				return 1;
			}
		return 0;
	}
	if (bootif_mac && bootif_mac[0])
		for (i = 0; i < n; i++)
			if (strcmp(ifs[i].mac, bootif_mac) == 0) {
				struct net_if t = ifs[i];

				for (j = i; j > 0; j--)
					ifs[j] = ifs[j - 1];
				ifs[0] = t;
				break;
			}
	return n;
}

int fetch_urls(const char *spec, char urls[][FETCH_URL_LEN], int max, char *err, size_t elen)
{
	const char *s = spec, *u;
	size_t len, i;
	int n = 0;

	while (text_item(&s, ",", &u, &len)) {
		if (len == 0)
			continue;
		if (len < 8 || strncmp(u, "http://", 7) != 0 || u[7] == '/')
			return text_err(err, elen, "live.fetch: '%.*s' is not an http://HOST/PATH URL", (int)len, u);
		for (i = 0; i < len; i++)
			if (!isgraph((unsigned char)u[i]))
				return text_err(err, elen, "live.fetch: URL '%.*s' holds a blank or control byte",
						(int)len, u);
		if (n == max)
			return text_err(err, elen, "live.fetch: more than %d URLs", max);
		if (len + 2 > FETCH_URL_LEN - 80) /* room for live/NN-name.squashfs */
			return text_err(err, elen, "live.fetch: URL of %zu bytes is too long", len);
		memcpy(urls[n], u, len);
		urls[n][len] = '\0';
		if (u[len - 1] != '/')
			memcpy(urls[n] + len, "/", 2);
		n++;
	}
	if (n == 0)
		return text_err(err, elen, "live.fetch= names no URL");
	return n;
}

int nbd_spec_parse(const char *s, struct nbd_spec *out, char *err, size_t elen)
{
	const char *slash = strchr(s, '/'), *colon, *hend;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!slash || slash == s || !slash[1])
		return text_err(err, elen, "live.nbd=%s: want HOST[:PORT]/EXPORT", s);
	/* [v6]:port is not needed on a lab LAN: one colon at most */
	colon = memchr(s, ':', (size_t)(slash - s));
	hend = colon ? colon : slash;
	if (hend == s)
		return text_err(err, elen, "live.nbd=%s: no host before the port", s);
	if ((size_t)(hend - s) >= sizeof(out->host) || strlen(slash + 1) >= sizeof(out->export))
		return text_err(err, elen, "live.nbd=%s: host or export name too long", s);
	memcpy(out->host, s, (size_t)(hend - s));
	for (i = 0; out->host[i]; i++)
		if (!isalnum((unsigned char)out->host[i]) && out->host[i] != '.' && out->host[i] != '-')
			return text_err(err, elen, "live.nbd=%s: '%s' is not a host name or IPv4 address", s,
					out->host);
	if (colon) {
		size_t n = (size_t)(slash - colon - 1);
		unsigned long v = 0;

		if (n == 0 || n > 5)
			return text_err(err, elen, "live.nbd=%s: bad port", s);
		for (i = 0; i < n; i++) {
			if (!isdigit((unsigned char)colon[1 + i]))
				return text_err(err, elen, "live.nbd=%s: bad port", s);
			v = v * 10 + (unsigned long)(colon[1 + i] - '0');
		}
		if (v == 0 || v > 65535)
			return text_err(err, elen, "live.nbd=%s: port %lu out of range", s, v);
		memcpy(out->port, colon + 1, n);
	} else {
		memcpy(out->port, NBD_DEFAULT_PORT, sizeof(NBD_DEFAULT_PORT));
	}
	for (i = 0; slash[1 + i]; i++)
		if (!isgraph((unsigned char)slash[1 + i]))
			return text_err(err, elen, "live.nbd=%s: the export name holds a blank or control byte", s);
	memcpy(out->export, slash + 1, strlen(slash + 1) + 1);
	return 0;
}

/* init-net.c - libFuzzer target for network boot's parsers of bytes from the network and the command line
 * (initramfs/init/fetch.c, nbd.c, netcfg.c): byte 0 picks the parser, the rest is its input.
 *   0: a served live/MANIFEST (fetch_manifest_parse): every file named is NN-name.squashfs|verity, once
 *   1: nbd-server's handshake bytes: greeting, option reply header, NBD_INFO payload
 *   2: live.fetch= (fetch_urls): every URL is http://, ends in '/', and holds no blank
 *   3: ip= (net_parse_ip) and BOOTIF= (net_parse_bootif) and live.nbd= (nbd_spec_parse) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "nbd.h"
#include "netcfg.h"

static struct fetch_file files[FETCH_MAX_FILES];
static char urls[FETCH_URL_MAX][PATH_LEN];

static void manifest(const char *text)
{
	char err[200];
	int n = fetch_manifest_parse(text, files, FETCH_MAX_FILES, err, sizeof(err)), i, j;
	size_t l;

	if (n < 0) {
		if (!memchr(err, 0, sizeof(err)) || !err[0])
			abort();
		return;
	}
	if (n == 0 || n > FETCH_MAX_FILES)
		abort();
	for (i = 0; i < n; i++) {
		l = strlen(files[i].name);
		if (l >= sizeof(files[i].name) || strchr(files[i].name, '/') ||
		    (strcmp(files[i].name + l - 9 * (l > 9), ".squashfs") != 0 &&
		     strcmp(files[i].name + l - 7 * (l > 7), ".verity") != 0))
			abort();
		for (j = 0; j < i; j++)
			if (strcmp(files[i].name, files[j].name) == 0)
				abort();
	}
}

static void handshake(const uint8_t *d, size_t n)
{
	struct nbd_opt_reply r;
	uint64_t size;
	uint16_t flags;
	int g = nbd_parse_greeting(d, n);

	if (g > 0xffff)
		abort();
	if (nbd_parse_reply(d, n, &r) == 0 && n < NBD_REPLY_HDR_LEN)
		abort();
	if (nbd_parse_info(d, n, &size, &flags) == 1 && n != 12)
		abort();
	if (n >= 4 && !nbd_reply_text((uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3]))
		abort();
}

static void fetch_list(const char *text)
{
	char err[200];
	int n = fetch_urls(text, urls, FETCH_URL_MAX, err, sizeof(err)), i;
	size_t l, k;

	for (i = 0; i < n; i++) {
		l = strlen(urls[i]);
		if (strncmp(urls[i], "http://", 7) != 0 || urls[i][l - 1] != '/' || l >= PATH_LEN)
			abort();
		for (k = 0; k < l; k++)
			if ((unsigned char)urls[i][k] <= ' ' || urls[i][k] == ',')
				abort();
	}
}

static void keys(const char *text)
{
	struct net_ip ip;
	struct nbd_spec s;
	char err[200], mac[18];

	if (net_parse_ip(text, &ip, err, sizeof(err)) == 0 && !ip.dhcp && !ip.off &&
	    (ip.prefix < 0 || ip.prefix > 32 || !ip.client[0]))
		abort();
	if (net_parse_bootif(text, mac) == 0 && strlen(mac) != 17)
		abort();
	if (nbd_spec_parse(text, &s, err, sizeof(err)) == 0 && (!s.host[0] || !s.export[0] || !s.port[0]))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	if (data[0] % 4 == 1) {
		uint8_t *copy = malloc(size - 1 ? size - 1 : 1); /* exact size: ASan sees any overread */

		if (!copy)
			abort();
		memcpy(copy, data + 1, size - 1);
		handshake(copy, size - 1);
		free(copy);
		return 0;
	}
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0: manifest(text); break;
	case 2: fetch_list(text); break;
	default: keys(text); break;
	}
	free(text);
	return 0;
}

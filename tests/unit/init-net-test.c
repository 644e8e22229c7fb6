/* Unit tests: network boot's parsers (initramfs/init/net.c, fetch.c, nbd.c): ip=, BOOTIF=, the interface order,
 * live.fetch= URLs and the served MANIFEST, live.nbd= and the NBD handshake replies; live.fetch='s downloads
 * against a stand-in wget (init-unit.sh writes it) that serves well, trickles or floods. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fetch.h"
#include "init-test.h"
#include "log.h"
#include "nbd.h"
#include "net.h"
#include "progress.h"
#include "util.h"

#ifndef WGET
#error "build with -DWGET=the stand-in wget (tests/unit/init-unit.sh)"
#endif

static void test_ip(void)
{
	struct net_ip ip;
	char err[200];

	CHECK(net_parse_ip("", &ip, err, sizeof(err)) == 0 && ip.dhcp && !ip.off, "empty: DHCP");
	CHECK(net_parse_ip("dhcp", &ip, err, sizeof(err)) == 0 && ip.dhcp, "dhcp");
	CHECK(net_parse_ip("on", &ip, err, sizeof(err)) == 0 && ip.dhcp, "on");
	CHECK(net_parse_ip("off", &ip, err, sizeof(err)) == 0 && ip.off, "off");
	CHECK(net_parse_ip("none", &ip, err, sizeof(err)) == 0 && ip.off, "none");
	/* the kernel's full static form */
	CHECK(net_parse_ip("10.0.0.5:10.0.0.1:10.0.0.254:255.255.0.0:pc7:eth1:off:10.0.0.53:10.0.0.54", &ip, err,
			   sizeof(err)) == 0,
	      "static: %s", err);
	CHECK(!ip.dhcp && !ip.off, "static is not DHCP");
	CHECK_STR(ip.client, "10.0.0.5");
	CHECK_STR(ip.gw, "10.0.0.254");
	CHECK(ip.prefix == 16, "prefix %d", ip.prefix);
	CHECK_STR(ip.hostname, "pc7");
	CHECK_STR(ip.device, "eth1");
	CHECK_STR(ip.dns0, "10.0.0.53");
	CHECK_STR(ip.dns1, "10.0.0.54");
	/* a client address alone: static, /24 */
	CHECK(net_parse_ip("192.168.1.9", &ip, err, sizeof(err)) == 0 && !ip.dhcp && ip.prefix == 24, "address only");
	/* DHCP on one named device */
	CHECK(net_parse_ip(":::::eth2:dhcp", &ip, err, sizeof(err)) == 0 && ip.dhcp, "dhcp on a device: %s", err);
	CHECK_STR(ip.device, "eth2");
	/* the other side: what is refused, and why */
	CHECK(net_parse_ip("10.0.0.300", &ip, err, sizeof(err)) < 0 && strstr(err, "client address"), "bad octet: %s",
	      err);
	CHECK(net_parse_ip("10.0.0.5::::::off", &ip, err, sizeof(err)) == 0, "off with address: %s", err);
	CHECK(net_parse_ip("::::::off", &ip, err, sizeof(err)) < 0 && strstr(err, "without a client"), "%s", err);
	CHECK(net_parse_ip("10.0.0.5:::255.0.255.0", &ip, err, sizeof(err)) < 0 && strstr(err, "run of ones"), "%s",
	      err);
	CHECK(net_parse_ip("10.0.0.5::::::bogus", &ip, err, sizeof(err)) < 0 && strstr(err, "autoconf"), "%s", err);
	CHECK(net_parse_ip("1:2:3:4:5:6:7:8:9:10:11", &ip, err, sizeof(err)) < 0 && strstr(err, "more than 10"), "%s",
	      err);
	CHECK(net_parse_ip("10.0.0.5:::::a/b", &ip, err, sizeof(err)) < 0 && strstr(err, "interface name"), "%s", err);
	CHECK(net_parse_ip("10.0.0", &ip, err, sizeof(err)) < 0, "three octets");
	CHECK(net_parse_ip("10..0.1", &ip, err, sizeof(err)) < 0, "empty octet");
}

static void test_bootif(void)
{
	char mac[18];

	CHECK(net_parse_bootif("01-52-54-00-AB-cd-09", mac) == 0, "pxelinux form");
	CHECK_STR(mac, "52:54:00:ab:cd:09");
	CHECK(net_parse_bootif("01-52:54:00:ab:cd:09", mac) == 0, "colons too");
	CHECK(net_parse_bootif("52-54-00-ab-cd-09", mac) < 0, "no ARP type");
	CHECK(net_parse_bootif("01-52-54-00-ab-cd", mac) < 0, "short");
	CHECK(net_parse_bootif("01-52-54-00-ab-cd-0g", mac) < 0, "not hex");
	CHECK(net_parse_bootif("01-52-54-00-ab-cd-09-11", mac) < 0, "long");
}

static void test_order(void)
{
	struct net_if ifs[3] = {
		{"eth1", "52:54:00:00:00:01"}, {"enp0s3", "52:54:00:00:00:02"}, {"eth0", "52:54:00:00:00:03"}};
	int n;

	n = net_order(ifs, 3, "", "52:54:00:00:00:03");
	CHECK(n == 3, "all tried: %d", n);
	CHECK_STR(ifs[0].name, "eth0"); /* BOOTIF's first */
	CHECK_STR(ifs[1].name, "enp0s3");
	CHECK_STR(ifs[2].name, "eth1");
	n = net_order(ifs, 3, "", "");
	CHECK(n == 3 && strcmp(ifs[0].name, "enp0s3") == 0, "name order without BOOTIF");
	n = net_order(ifs, 3, "", "52:54:00:00:00:99");
	CHECK(n == 3 && strcmp(ifs[0].name, "enp0s3") == 0, "unknown BOOTIF: name order");
	n = net_order(ifs, 3, "eth1", "52:54:00:00:00:03");
	CHECK(n == 1 && strcmp(ifs[0].name, "eth1") == 0, "ip='s device alone, over BOOTIF");
	n = net_order(ifs, 3, "wlan0", "");
	CHECK(n == 0, "ip= names a missing device: none");
}

static void test_urls(void)
{
	char urls[FETCH_URL_MAX][PATH_LEN], err[200];
	int n;

	n = fetch_urls("http://10.0.0.1/images/ab12/", urls, FETCH_URL_MAX, err, sizeof(err));
	CHECK(n == 1, "one: %s", err);
	CHECK_STR(urls[0], "http://10.0.0.1/images/ab12/");
	n = fetch_urls("http://a/x,http://b:8080/y/", urls, FETCH_URL_MAX, err, sizeof(err));
	CHECK(n == 2, "two: %s", err);
	CHECK_STR(urls[0], "http://a/x/"); /* a base: '/' added */
	CHECK_STR(urls[1], "http://b:8080/y/");
	CHECK(fetch_urls("https://a/x", urls, FETCH_URL_MAX, err, sizeof(err)) < 0 && strstr(err, "https://a/x"),
	      "https is refused by name: %s", err);
	CHECK(fetch_urls("", urls, FETCH_URL_MAX, err, sizeof(err)) < 0 && strstr(err, "no URL"), "%s", err);
	CHECK(fetch_urls("http:///x", urls, FETCH_URL_MAX, err, sizeof(err)) < 0, "no host");
	CHECK(fetch_urls("http://a/x\x01y", urls, FETCH_URL_MAX, err, sizeof(err)) < 0, "control byte");
	CHECK(fetch_urls("http://a,http://b,http://c,http://d,http://e,http://f,http://g,http://h,http://i", urls,
			 FETCH_URL_MAX, err, sizeof(err)) < 0 &&
		      strstr(err, "more than"),
	      "too many: %s", err);
}

static void test_manifest(void)
{
	struct fetch_file f[4];
	char err[200];
	int n;

	n = fetch_manifest_parse("5726208 10-base.squashfs\n53248 10-base.verity\r\n\n4096 20-desktop.squashfs\n", f, 4,
				 err, sizeof(err));
	CHECK(n == 3, "three files: %s", err);
	CHECK(n == 3 && strcmp(f[0].name, "10-base.squashfs") == 0 && f[0].bytes == 5726208, "first");
	CHECK(n == 3 && strcmp(f[1].name, "10-base.verity") == 0 && f[1].bytes == 53248, "CRLF tolerated");
	CHECK(fetch_manifest_parse("12 ../../etc/passwd.squashfs\n", f, 4, err, sizeof(err)) < 0 &&
		      strstr(err, "line 1"),
	      "path escape refused: %s", err);
	CHECK(fetch_manifest_parse("12 10-base.squashfs\n12 10-base.squashfs\n", f, 4, err, sizeof(err)) < 0 &&
		      strstr(err, "twice"),
	      "duplicate: %s", err);
	CHECK(fetch_manifest_parse("x 10-base.squashfs\n", f, 4, err, sizeof(err)) < 0, "no size");
	CHECK(fetch_manifest_parse("12 10-base.img\n", f, 4, err, sizeof(err)) < 0, "other suffix");
	CHECK(fetch_manifest_parse("12 base.squashfs\n", f, 4, err, sizeof(err)) < 0, "no NN-");
	CHECK(fetch_manifest_parse("12 10-.squashfs\n", f, 4, err, sizeof(err)) < 0, "NN- without a name");
	CHECK(fetch_manifest_parse("12 10-a:b.squashfs\n", f, 4, err, sizeof(err)) < 0, "':' refused (lowerdir)");
	/* the medium's layer names (layer_stem_ok in contract.h): '+' too, as live/ on an ISO may hold it */
	CHECK(fetch_manifest_parse("12 10-gtk+3_x.y.squashfs\n", f, 4, err, sizeof(err)) == 1, "'+' accepted: %s", err);
	CHECK(fetch_manifest_parse("99999999999999999999999 10-a.squashfs\n", f, 4, err, sizeof(err)) < 0 &&
		      strstr(err, "too large"),
	      "overflow: %s", err);
	CHECK(fetch_manifest_parse("\n\n", f, 4, err, sizeof(err)) < 0 && strstr(err, "no files"), "empty: %s", err);
	CHECK(fetch_manifest_parse(
		      "1 10-a.squashfs\n1 11-a.squashfs\n1 12-a.squashfs\n1 13-a.squashfs\n1 14-a.squashfs\n", f, 4,
		      err, sizeof(err)) < 0 &&
		      strstr(err, "more than 4"),
	      "too many: %s", err);
}

/* fetch_medium against the stand-in wget, live.timeout=2, from http://t/MODE/: its result, its seconds. */
static int fetch_as(const char *mode, char *run_live, double *secs)
{
	static struct plan p;
	static struct boot b;
	double t0 = progress_now();
	int rc;

	memset(&p, 0, sizeof(p));
	memset(&b, 0, sizeof(b));
	p.timeout = 2;
	p.nfetch = 1;
	snprintf(p.fetch[0], sizeof(p.fetch[0]), "http://t/%s/", mode);
	snprintf(p.run_live, sizeof(p.run_live), "%s", run_live);
	p.facts.mem_available = 1ULL << 34;
	snprintf(b.net_result, sizeof(b.net_result), "eth0 (test)");
	snprintf(b.device, sizeof(b.device), "tmpfs mounted before"); /* no mount on the host */
	fail_clear();
	rc = fetch_medium(&p, &b);
	*secs = progress_now() - t0;
	return rc;
}

static void test_fetch(void)
{
	char run_live[] = "/tmp/init-net-fetch.XXXXXX", path[128], text[16];
	const char *layer = "/medium/live/10-base.squashfs";
	double secs;

	if (!mkdtemp(run_live)) {
		CHECK(0, "mkdtemp");
		return;
	}
	alarm(60); /* a fetch that never ends fails the test (SIGALRM) instead of hanging it */
	CHECK(fetch_as("good", run_live, &secs) == 0, "a served image is fetched: %s", fail_what());
	snprintf(path, sizeof(path), "%s%s", run_live, layer);
	CHECK(read_text(path, text, sizeof(text)) == 5 && strcmp(text, "hello") == 0, "its layer in %s", path);
	CHECK(unlink(path) == 0, "unlink %s", path);
	/* a MANIFEST trickled a byte every 0.3 s (no idle stop, live.timeout never reached): stopped at the deadline */
	CHECK(fetch_as("trickle", run_live, &secs) < 0 && strstr(fail_what(), "live/MANIFEST: not done within 2 s") &&
		      strstr(fail_what(), "http://t/trickle/live/MANIFEST") && strstr(fail_what(), "still sending"),
	      "trickled MANIFEST: %s", fail_what());
	CHECK(secs < 4.5, "stopped at live.timeout: %.1f s", secs);
	/* a MANIFEST that never ends: each try stopped past MANIFEST_MAX bytes, then the deadline */
	CHECK(fetch_as("flood", run_live, &secs) < 0 && strstr(fail_what(), "live/MANIFEST: not done") &&
		      strstr(fail_what(), "more than 16383 bytes, more than a MANIFEST holds"),
	      "endless MANIFEST: %s", fail_what());
	CHECK(secs < 4.5, "stopped at live.timeout: %.1f s", secs);
	/* a layer trickled: the layers' deadline (live.timeout plus 100 bytes at 256 KiB/s) names it */
	CHECK(fetch_as("slowlayer", run_live, &secs) < 0 &&
		      strstr(fail_what(), "live/10-base.squashfs: not done within 2 s") &&
		      strstr(fail_what(), "http://t/slowlayer/live/10-base.squashfs"),
	      "trickled layer: %s", fail_what());
	CHECK(secs < 4.5, "stopped at live.timeout: %.1f s", secs);
	alarm(0);
	fail_clear();
	snprintf(path, sizeof(path), "rm -rf '%s'", run_live);
	CHECK(system(path) == 0, "%s", path);
}

static void test_nbd_spec(void)
{
	struct nbd_spec s;
	char err[200];

	CHECK(nbd_spec_parse("10.0.0.1/liveunion-ab12", &s, err, sizeof(err)) == 0, "%s", err);
	CHECK_STR(s.host, "10.0.0.1");
	CHECK_STR(s.port, "10809");
	CHECK_STR(s.export, "liveunion-ab12");
	CHECK(nbd_spec_parse("server.lab:10900/x", &s, err, sizeof(err)) == 0 && strcmp(s.port, "10900") == 0, "port");
	CHECK(nbd_spec_parse("server", &s, err, sizeof(err)) < 0 && strstr(err, "HOST[:PORT]/EXPORT"), "%s", err);
	CHECK(nbd_spec_parse("/x", &s, err, sizeof(err)) < 0, "no host");
	CHECK(nbd_spec_parse("h:/x", &s, err, sizeof(err)) < 0, "empty port");
	CHECK(nbd_spec_parse(":9/l2", &s, err, sizeof(err)) < 0 && strstr(err, "no host"), "empty host: %s", err);
	CHECK(nbd_spec_parse("h:70000/x", &s, err, sizeof(err)) < 0 && strstr(err, "range"), "%s", err);
	CHECK(nbd_spec_parse("h x/y", &s, err, sizeof(err)) < 0, "blank in host");
}

static void test_nbd_replies(void)
{
	unsigned char g[18] = {'N', 'B', 'D', 'M', 'A', 'G', 'I', 'C', 'I', 'H', 'A', 'V', 'E', 'O', 'P', 'T', 0, 3};
	unsigned char r[20] = {0, 0x03, 0xe8, 0x89, 0x04, 0x55, 0x65, 0xa9, 0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 12};
	unsigned char info[12] = {0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 3};
	struct nbd_opt_reply rep;
	uint64_t size = 0;
	uint16_t flags = 0;

	CHECK(nbd_parse_greeting(g, sizeof(g)) == 3, "flags 3");
	g[9] = 'X';
	CHECK(nbd_parse_greeting(g, sizeof(g)) < 0, "oldstyle or garbage refused");
	CHECK(nbd_parse_greeting(g, 10) < 0, "short");
	CHECK(nbd_parse_reply(r, sizeof(r), &rep) == 0 && rep.option == 7 && rep.type == 3 && rep.len == 12, "reply");
	r[0] = 1;
	CHECK(nbd_parse_reply(r, sizeof(r), &rep) < 0, "bad magic");
	CHECK(nbd_parse_info(info, sizeof(info), &size, &flags) == 1 && size == 0x200000 && flags == 3, "export info");
	info[1] = 3; /* NBD_INFO_BLOCK_SIZE: not ours */
	CHECK(nbd_parse_info(info, sizeof(info), &size, &flags) == 0, "other info ignored");
	info[1] = 0;
	CHECK(nbd_parse_info(info, 11, &size, &flags) < 0, "short export info");
	CHECK(strstr(nbd_reply_text(0x80000006u), "unknown") != NULL, "unknown export worded");
}

int main(void)
{
	test_ip();
	test_bootif();
	test_order();
	test_urls();
	test_manifest();
	test_fetch();
	test_nbd_spec();
	test_nbd_replies();
	return t_summary();
}

/* live.nbd=: the ISO read from nbd-server as a network block device (the kernel's nbd driver). */
#include "nbd.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/nbd.h>

#include "log.h"
#include "net.h"
#include "util.h"

#define NBD_DEVICES 16
/* A request the server has not answered in this many seconds fails with an I/O error (and the connection is
 * dropped): a server gone without a word (power cut, cable) ends in errors, not a hang. */
#define NBD_IO_TIMEOUT_S 30
#define IO_TIMEOUT_MS 10000

#define OPTS_MAGIC 0x49484156454F5054ULL /* "IHAVEOPT" */
#define REPLY_MAGIC 0x0003e889045565a9ULL
#define FLAG_FIXED_NEWSTYLE 1u
#define FLAG_NO_ZEROES 2u
#define OPT_EXPORT_NAME 1u
#define OPT_GO 7u
#define REP_ACK 1u
#define REP_INFO 3u
#define REP_ERR_UNSUP 0x80000001u
#define INFO_EXPORT 0u
#define TFLAG_READ_ONLY 2u

static char *name_area;
static size_t name_len;

void nbd_set_name_area(char *argv0, size_t len)
{
	name_area = argv0;
	name_len = len;
}

static uint64_t be64(const unsigned char *b)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static uint32_t be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void put32(unsigned char *b, uint32_t v)
{
	b[0] = (unsigned char)(v >> 24);
	b[1] = (unsigned char)(v >> 16);
	b[2] = (unsigned char)(v >> 8);
	b[3] = (unsigned char)v;
}

static void put64(unsigned char *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

int nbd_parse_greeting(const unsigned char *b, size_t len)
{
	if (len < NBD_GREETING_LEN || memcmp(b, "NBDMAGIC", 8) != 0 || be64(b + 8) != OPTS_MAGIC)
		return -1;
	return (int)((unsigned)b[16] << 8 | b[17]);
}

int nbd_parse_reply(const unsigned char *b, size_t len, struct nbd_opt_reply *out)
{
	if (len < NBD_REPLY_HDR_LEN || be64(b) != REPLY_MAGIC)
		return -1;
	out->option = be32(b + 8);
	out->type = be32(b + 12);
	out->len = be32(b + 16);
	return 0;
}

int nbd_parse_info(const unsigned char *b, size_t len, uint64_t *size, uint16_t *flags)
{
	if (len < 2)
		return -1;
	if (((unsigned)b[0] << 8 | b[1]) != INFO_EXPORT)
		return 0;
	if (len != 12)
		return -1;
	*size = be64(b + 2);
	*flags = (uint16_t)((unsigned)b[10] << 8 | b[11]);
	return 1;
}

const char *nbd_reply_text(uint32_t type)
{
	switch (type) {
	case 0x80000001u: return "the server does not know this option";
	case 0x80000002u: return "the server's policy refuses this client";
	case 0x80000003u: return "the server calls the request invalid";
	case 0x80000004u: return "the server cannot do it on its platform";
	case 0x80000005u: return "the server wants TLS";
	case 0x80000006u: return "the export is unknown to the server";
	case 0x80000007u: return "the server is shutting down";
	case 0x80000008u: return "the server wants a block size negotiation";
	case 0x80000009u: return "the request is too big for the server";
	default: return type & 0x80000000u ? "the server refused" : "unexpected reply";
	}
}

/* Whole reads and writes with a deadline: a server that stops talking during the handshake fails it. */
static int io_full(int fd, void *buf, size_t len, bool wr)
{
	unsigned char *b = buf;
	size_t done = 0;

	while (done < len) {
		struct pollfd pf = {fd, wr ? POLLOUT : POLLIN, 0};
		ssize_t n;
		int r = poll(&pf, 1, IO_TIMEOUT_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			errno = r == 0 ? ETIMEDOUT : errno;
			return -1;
		}
		n = wr ? send(fd, b + done, len - done, MSG_NOSIGNAL) : recv(fd, b + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n == 0 ? ECONNRESET : errno;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

static int dial(const struct nbd_spec *s, char *why, size_t wlen)
{
	struct addrinfo hints, *res = NULL, *a;
	int fd = -1, r, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(s->host, s->port, &hints, &res);
	if (r != 0)
		return text_err(why, wlen, "cannot resolve %s: %s", s->host, gai_strerror(r));
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		text_fmt(why, wlen, "connect to %s port %s: %s", s->host, s->port, strerror(errno));
		if (close(fd) != 0)
			dbg("close: %s", strerror(errno));
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd >= 0 && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
		dbg("TCP_NODELAY: %s", strerror(errno));
	return fd;
}

static int send_opt(int fd, uint32_t opt, const unsigned char *data, uint32_t len)
{
	unsigned char h[16];

	put64(h, OPTS_MAGIC);
	put32(h + 8, opt);
	put32(h + 12, len);
	return io_full(fd, h, sizeof(h), true) != 0 || (len && io_full(fd, (void *)data, len, true) != 0) ? -1 : 0;
}

/* The handshake: NBD_OPT_GO, or NBD_OPT_EXPORT_NAME with an old server. 0 with size and flags; -1 with why. */
static int handshake(int fd, const char *export, uint64_t *size, uint16_t *flags, char *why, size_t wlen)
{
	unsigned char g[NBD_GREETING_LEN], cf[4], data[4 + 128 + 2], h[NBD_REPLY_HDR_LEN], payload[256], tail[10];
	struct nbd_opt_reply rep;
	uint32_t nlen = (uint32_t)strlen(export);
	int hflags, have_info = 0;

	if (io_full(fd, g, sizeof(g), false) != 0)
		return text_err(why, wlen, "read the server's greeting: %s", strerror(errno));
	hflags = nbd_parse_greeting(g, sizeof(g));
	if (hflags < 0 || !(hflags & FLAG_FIXED_NEWSTYLE))
		return text_err(why, wlen, "not an NBD server speaking the fixed newstyle handshake");
	put32(cf, FLAG_FIXED_NEWSTYLE | ((unsigned)hflags & FLAG_NO_ZEROES));
	if (io_full(fd, cf, sizeof(cf), true) != 0)
		return text_err(why, wlen, "send the client flags: %s", strerror(errno));
	put32(data, nlen);
	memcpy(data + 4, export, nlen);
	data[4 + nlen] = data[5 + nlen] = 0; /* no information requests: NBD_INFO_EXPORT comes anyway */
	if (send_opt(fd, OPT_GO, data, 4 + nlen + 2) != 0)
		return text_err(why, wlen, "send NBD_OPT_GO: %s", strerror(errno));
	for (;;) {
		if (io_full(fd, h, sizeof(h), false) != 0)
			return text_err(why, wlen, "read the reply to NBD_OPT_GO: %s", strerror(errno));
		if (nbd_parse_reply(h, sizeof(h), &rep) != 0 || rep.option != OPT_GO)
			return text_err(why, wlen, "a malformed reply to NBD_OPT_GO");
		if (rep.len > sizeof(payload))
			return text_err(why, wlen, "a reply of %u bytes to NBD_OPT_GO, more than any we expect",
					rep.len);
		if (rep.len && io_full(fd, payload, rep.len, false) != 0)
			return text_err(why, wlen, "read the reply to NBD_OPT_GO: %s", strerror(errno));
		if (rep.type == REP_INFO) {
			int r = nbd_parse_info(payload, rep.len, size, flags);

			if (r < 0)
				return text_err(why, wlen, "a malformed NBD_INFO_EXPORT");
			have_info |= r;
			continue;
		}
		if (rep.type == REP_ACK) {
			if (!have_info)
				return text_err(why, wlen, "the server said yes without the export's size");
			return 0;
		}
		if (rep.type == REP_ERR_UNSUP)
			break;
		return text_err(why, wlen, "export '%s': %s%s%.*s", export, nbd_reply_text(rep.type),
				rep.len ? ": " : "", (int)rep.len, (const char *)payload);
	}
	/* An old server: NBD_OPT_EXPORT_NAME, answered by size and flags (and 124 zeroes unless NO_ZEROES), or by
	 * closing the connection when the export does not exist. */
	if (send_opt(fd, OPT_EXPORT_NAME, (const unsigned char *)export, nlen) != 0 ||
	    io_full(fd, tail, 10, false) != 0)
		return text_err(why, wlen, "export '%s': the server closed the connection (unknown export?)", export);
	*size = be64(tail);
	*flags = (uint16_t)((unsigned)tail[8] << 8 | tail[9]);
	if (!(hflags & FLAG_NO_ZEROES) && io_full(fd, payload, 124, false) != 0)
		return text_err(why, wlen, "read the export's header: %s", strerror(errno));
	return 0;
}

static unsigned long long sys_size(int n)
{
	char path[64], buf[32];

	if (path_fmt(path, sizeof(path), "/sys/block/nbd%d/size", n) != 0 || read_text(path, buf, sizeof(buf)) < 0) {
		fail_clear();
		return 0;
	}
	return strtoull(buf, NULL, 10);
}

/* The child that lends the kernel its socket: NBD_DO_IT returns only when the connection ends. */
static void serve_device(int dev, int sock, int n, const struct nbd_spec *s)
{
	int r;

	if (name_area && name_len > 1) {
		memset(name_area, 0, name_len);
		memcpy(name_area, "@nbd", name_len > 5 ? 4 : name_len - 1);
	}
	if (prctl(PR_SET_NAME, "liveunion-nbd", 0, 0, 0) != 0)
		dbg("prctl: %s", strerror(errno));
	r = ioctl(dev, NBD_DO_IT);
	msg("live.nbd: the connection of /dev/nbd%d to %s:%s (export %s) ended%s%s: reads of what was not read "
	    "before now fail with I/O errors",
	    n, s->host, s->port, s->export, r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
	if (ioctl(dev, NBD_CLEAR_QUE) != 0 || ioctl(dev, NBD_CLEAR_SOCK) != 0)
		dbg("nbd clear: %s", strerror(errno));
	if (close(sock) != 0 || close(dev) != 0)
		dbg("close: %s", strerror(errno));
	_exit(r < 0 ? 1 : 0);
}

int nbd_connect(const struct plan *p, struct boot *b)
{
	const struct nbd_spec *s = &p->nbd;
	char why[300] = "", devname[32];
	uint64_t size = 0;
	uint16_t flags = 0;
	int sock = -1, dev = -1, n, waited = 0, one = 1;
	double backoff = 1;
	long long deadline;
	pid_t pid;

	if (!s->host[0])
		return fail(EINVAL, "%s", p->net_bad);
	if (b->nbd_device[0]) {
		msg("live.nbd: %s is connected already (an earlier try)", b->nbd_device);
		return 0;
	}
	if (!b->net_result[0] && net_up(p, b) != 0)
		return -1;
	deadline = (long long)time(NULL) + p->timeout;
	for (;;) {
		sock = dial(s, why, sizeof(why));
		if (sock >= 0 && handshake(sock, s->export, &size, &flags, why, sizeof(why)) == 0)
			break;
		if (sock >= 0 && close(sock) != 0)
			dbg("close: %s", strerror(errno));
		sock = -1;
		if ((long long)time(NULL) + (long long)backoff > deadline)
			return fail(ETIMEDOUT, "live.nbd=%s:%s/%s: %s (tried for %u s, live.timeout)", s->host, s->port,
				    s->export, why, p->timeout);
		msg("live.nbd: %s; again in %.0f s", why, backoff);
		sleep_ms((long)(backoff * 1000));
		backoff = backoff * 2 > 8 ? 8 : backoff * 2;
	}
	for (n = 0; n < NBD_DEVICES && sys_size(n) != 0; n++)
		;
	text_fmt(devname, sizeof(devname), "/dev/nbd%d", n);
	if (n == NBD_DEVICES || (dev = open(devname, O_RDWR | O_CLOEXEC)) < 0) {
		int e = n == NBD_DEVICES ? EBUSY : errno;

		if (close(sock) != 0)
			dbg("close: %s", strerror(errno));
		return fail(e, "live.nbd: open a free /dev/nbdN (is CONFIG_BLK_DEV_NBD or nbd.ko there?)");
	}
	if (ioctl(dev, NBD_SET_BLKSIZE, 512UL) != 0 ||
	    ioctl(dev, NBD_SET_SIZE_BLOCKS, (unsigned long)(size / 512)) != 0 ||
	    ioctl(dev, NBD_SET_TIMEOUT, (unsigned long)NBD_IO_TIMEOUT_S) != 0 ||
	    ioctl(dev, NBD_SET_FLAGS, (unsigned long)flags) != 0 ||
	    ioctl(dev, NBD_SET_SOCK, (unsigned long)sock) != 0 || ioctl(dev, BLKROSET, &one) != 0) {
		int e = errno;

		if (close(sock) != 0 || close(dev) != 0)
			dbg("close: %s", strerror(errno));
		return fail(e, "live.nbd: set up %s", devname);
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		if (ioctl(dev, NBD_CLEAR_SOCK) != 0 || close(sock) != 0 || close(dev) != 0)
			dbg("close: %s", strerror(errno));
		return fail(e, "live.nbd: fork the process that holds %s", devname);
	}
	if (pid == 0)
		serve_device(dev, sock, n, s);
	if (close(sock) != 0 || close(dev) != 0)
		dbg("close: %s", strerror(errno));
	while (sys_size(n) == 0 && waited < 5000) {
		sleep_ms(50);
		waited += 50;
	}
	if (sys_size(n) == 0)
		return fail(EIO, "live.nbd: %s did not come up (see the kernel messages above)", devname);
	msg("live.nbd: %s is export %s of %s:%s, %llu MiB%s (process %d holds the connection)", devname, s->export,
	    s->host, s->port, (unsigned long long)(size >> 20), flags & TFLAG_READ_ONLY ? ", read-only" : "", (int)pid);
	text_fmt(b->nbd_device, sizeof(b->nbd_device), "%s", devname);
	return 0;
}

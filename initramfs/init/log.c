#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONSOLES 8

static int con_fd[MAX_CONSOLES];
static char con_name[MAX_CONSOLES][32];
static int con_count;
static int kmsg_fd = -1;
static int kmsg_unlimited; /* we lifted the kernel's limit of 10 user records per 5 s (to put back) */
static int debug_on;

#define DEVKMSG_SYSCTL "/proc/sys/kernel/printk_devkmsg"

/* Write a value to a sysctl file; 0 when it was taken (printk_devkmsg takes only a word and a newline). */
static int sysctl_put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t w;

	if (fd < 0)
		return -1;
	w = write(fd, val, strlen(val));
	if (close(fd) != 0 || w != (ssize_t)strlen(val))
		return -1;
	return 0;
}

/* The whole boot story belongs in dmesg: with the default rate limit the kernel drops most of it. Left alone
 * when printk.devkmsg= was given (the kernel then refuses the write). */
static void kmsg_unlimit(void)
{
	char cur[16] = "";
	int fd = open(DEVKMSG_SYSCTL, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, cur, sizeof(cur) - 1);
	if (close(fd) != 0 || n <= 0)
		return;
	if (strncmp(cur, "ratelimit", 9) == 0 && sysctl_put(DEVKMSG_SYSCTL, "on\n") == 0)
		kmsg_unlimited = 1;
}

void log_handover(void)
{
	if (kmsg_unlimited && sysctl_put(DEVKMSG_SYSCTL, "ratelimit\n") == 0)
		kmsg_unlimited = 0;
}

static char fail_buf[768];
static int fail_err;

static int add_console(const char *name)
{
	char path[64];
	int fd;

	if (con_count >= MAX_CONSOLES || strlen(name) >= sizeof(con_name[0]))
		return -1;
	if (snprintf(path, sizeof(path), "/dev/%s", name) >= (int)sizeof(path))
		return -1;
	/* O_NOCTTY: PID 1 must not acquire a controlling tty by logging; the rescue shell wants it. */
	fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	con_fd[con_count] = fd;
	memcpy(con_name[con_count], name, strlen(name) + 1);
	con_count++;
	return 0;
}

void log_open_consoles(void)
{
	char buf[256];
	ssize_t n = -1;
	int missed = 0;
	int fd = open("/sys/class/tty/console/active", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		if (close(fd) != 0)
			n = -1;
	}
	if (n > 0) {
		char *save = NULL, *tok;

		buf[n] = '\0';
		for (tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
			if (add_console(tok) != 0)
				missed++;
	}
	if (con_count == 0 && add_console("console") != 0) {
		con_fd[0] = 2;
		memcpy(con_name[0], "console", 8);
		con_count = 1;
	}
	/* Level 7 (debug) keeps dmesg complete without printing each line twice on the console. */
	if (!kmsg_unlimited)
		kmsg_unlimit();
	kmsg_fd = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	/* A listed console we cannot open is not fatal: the others still get the messages. */
	if (missed)
		msg("could not open %d of the active consoles", missed);
}

void log_reopen_consoles(void)
{
	int i;

	for (i = 0; i < con_count; i++)
		if (con_fd[i] > 2 && close(con_fd[i]) != 0) {
			/* a hung-up tty may report an error on close: the fd is gone either way */
		}
	con_count = 0;
	if (kmsg_fd >= 0 && close(kmsg_fd) != 0) {
		/* as above */
	}
	kmsg_fd = -1;
	log_open_consoles();
}

void log_use_fd(int fd)
{
	con_fd[0] = fd;
	memcpy(con_name[0], "stderr", 7);
	con_count = 1;
	kmsg_fd = -1;
}

void log_debug_enable(int on)
{
	debug_on = on;
}

int log_console_names(const char *names[], int max)
{
	int i;

	for (i = 0; i < con_count && i < max; i++)
		names[i] = con_name[i];
	return i;
}

static void write_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, s, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* A full serial buffer: wait briefly rather than drop boot messages, but never block forever. */
			usleep(1000);
			continue;
		}
		if (w <= 0)
			return; /* the console is gone; there is no one left to tell */
		s += w;
		len -= (size_t)w;
	}
}

static void vmsg(const char *fmt, va_list ap)
{
	char line[1024];
	char cline[1040];
	char kline[1040];
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	int c, i;

	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	/* one write per line: kernel messages printed meanwhile then go between lines, not inside one */
	c = snprintf(cline, sizeof(cline), "liveunion: %.*s\n", n, line);
	if (c < 0)
		return;
	if ((size_t)c >= sizeof(cline)) {
		c = (int)sizeof(cline) - 1;
		cline[c - 1] = '\n';
	}
	for (i = 0; i < con_count; i++)
		write_all(con_fd[i], cline, (size_t)c);
	if (kmsg_fd >= 0) {
		int k = snprintf(kline, sizeof(kline), "<15>liveunion: %s\n", line);

		if (k > 0 && write(kmsg_fd, kline, (size_t)k < sizeof(kline) ? (size_t)k : sizeof(kline) - 1) < 0) {
			/* kmsg rate-limits user writes; the consoles already have the message */
		}
	}
}

void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void dbg(const char *fmt, ...)
{
	va_list ap;

	if (!debug_on)
		return;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vsnprintf(fail_buf, sizeof(fail_buf), fmt, ap) < 0)
		fail_buf[0] = '\0';
	va_end(ap);
	fail_err = err;
	return -1;
}

const char *fail_what(void)
{
	return fail_buf;
}
int fail_errno(void)
{
	return fail_err;
}
void fail_clear(void)
{
	fail_buf[0] = '\0';
	fail_err = 0;
}

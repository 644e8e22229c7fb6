/* A passphrase asked on the screen and on the serial console at once: whoever is at the machine answers where
 * they are (the first line to arrive wins), nothing typed is echoed, and each console gets its settings back. */
#include "ask.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "text.h"
#include "util.h"

#define MAX_CONSOLES 8

int ask_consoles(const char *active, char devs[][32], int max)
{
	const char *s = active, *w;
	size_t l;
	int n = 0, i;

	while (n < max && text_item(&s, " \t\n", &w, &l)) {
		if (l == 0 || l > 20 || memchr(w, '/', l))
			continue;
		text_fmt(devs[n], sizeof(devs[n]), "/dev/%.*s", (int)l, w);
		for (i = 0; i < n && strcmp(devs[i], devs[n]) != 0; i++)
			;
		n += i == n;
	}
	return n;
}

static long long now_ms(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
		return 0;
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void say(int fd, const char *text)
{
	if (write_full(fd, text, strlen(text)) != 0) {
		/* a console that went away: the others still ask */
	}
}

/* The consoles asked at once, what each has typed so far, and their settings to give back. */
struct asking {
	int n;
	char devs[MAX_CONSOLES][32];
	struct pollfd pf[MAX_CONSOLES];
	struct termios old[MAX_CONSOLES];
	bool saved[MAX_CONSOLES];
	char got[MAX_CONSOLES][256];
	size_t have[MAX_CONSOLES];
};

/* Every active console opened (else /dev/console), echo off but for the newline, the prompt written. */
static void consoles_open(struct asking *a, const char *prompt)
{
	char active[256] = "";
	int i, fd = open("/sys/class/tty/console/active", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t r = read(fd, active, sizeof(active) - 1);
		active[r > 0 ? r : 0] = '\0';
		if (close(fd) != 0)
			dbg("close console list: %s", strerror(errno));
	}
	a->n = ask_consoles(active, a->devs, MAX_CONSOLES);
	if (a->n == 0)
		a->n = ask_consoles("console", a->devs, MAX_CONSOLES);
	for (i = 0; i < a->n; i++) {
		a->pf[i].fd = open(a->devs[i], O_RDWR | O_NOCTTY | O_CLOEXEC);
		a->pf[i].events = POLLIN;
		if (a->pf[i].fd < 0)
			continue;
		if (tcgetattr(a->pf[i].fd, &a->old[i]) == 0) {
			struct termios t = a->old[i];

			t.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK);
			t.c_lflag |= ICANON | ECHONL;
			a->saved[i] = tcsetattr(a->pf[i].fd, TCSAFLUSH, &t) == 0;
		}
		say(a->pf[i].fd, prompt);
	}
}

/* What console i has to read, added to its line: 1 when the line is complete. A console that went away is closed
 * (the others still ask). */
static int read_some(struct asking *a, int i)
{
	char c[64];
	ssize_t k = read(a->pf[i].fd, c, sizeof(c)), j;

	if (k <= 0) {
		if (close(a->pf[i].fd) != 0)
			dbg("close %s: %s", a->devs[i], strerror(errno));
		a->pf[i].fd = -1;
		return 0;
	}
	for (j = 0; j < k; j++) {
		if (c[j] == '\n' || c[j] == '\r')
			return 1;
		if (a->have[i] < sizeof(a->got[i]) - 1)
			a->got[i][a->have[i]++] = c[j];
	}
	return 0;
}

/* The first console whose line is complete, or -1 with *err: ETIMEDOUT, ENODEV (no console left), poll's error. */
static int wait_line(struct asking *a, unsigned timeout_s, int *err)
{
	long long deadline = now_ms() + (long long)timeout_s * 1000;
	int i, answered = -1;

	*err = 0;
	while (answered < 0 && !*err) {
		long long left = deadline - now_ms();
		int r, open_fds = 0;

		for (i = 0; i < a->n; i++)
			open_fds += a->pf[i].fd >= 0;
		if (!open_fds) {
			*err = ENODEV;
			break;
		}
		if (timeout_s && left <= 0) {
			*err = ETIMEDOUT;
			break;
		}
		r = poll(a->pf, (nfds_t)a->n, timeout_s ? (int)(left > 60000 ? 60000 : left) : 60000);
		if (r < 0 && errno != EINTR) {
			*err = errno;
			break;
		}
		for (i = 0; r > 0 && i < a->n && answered < 0; i++)
			if (a->pf[i].fd >= 0 && (a->pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && read_some(a, i))
				answered = i;
	}
	return answered;
}

/* Each console's settings given back and closed; the others are told where the answer came from. */
static void consoles_close(struct asking *a, int answered)
{
	char note[96];
	int i;

	for (i = 0; i < a->n; i++) {
		if (a->pf[i].fd < 0)
			continue;
		if (a->saved[i] && tcsetattr(a->pf[i].fd, TCSAFLUSH, &a->old[i]) != 0)
			dbg("restore %s: %s", a->devs[i], strerror(errno));
		if (answered >= 0 && i != answered) {
			text_fmt(note, sizeof(note), "\n(answered on %s)\n", a->devs[answered]);
			say(a->pf[i].fd, note);
		} else if (answered < 0) { /* the prompt's line ends before what is said next */
			say(a->pf[i].fd, "\n");
		}
		if (close(a->pf[i].fd) != 0)
			dbg("close %s: %s", a->devs[i], strerror(errno));
	}
}

int ask_secret(const char *prompt, unsigned timeout_s, char *buf, size_t len)
{
	struct asking a;
	int answered, rc = -1, err = ETIMEDOUT;

	memset(&a, 0, sizeof(a));
	consoles_open(&a, prompt);
	answered = wait_line(&a, timeout_s, &err);
	consoles_close(&a, answered);
	if (answered >= 0) {
		size_t l = a.have[answered] < len ? a.have[answered] : len - 1;

		memcpy(buf, a.got[answered], l);
		buf[l] = '\0';
		rc = (int)l;
	}
	memset(a.got, 0, sizeof(a.got)); /* what was typed, the secret among it */
	if (rc < 0)
		errno = err;
	return rc;
}

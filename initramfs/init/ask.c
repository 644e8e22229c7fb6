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

int ask_secret(const char *prompt, unsigned timeout_s, char *buf, size_t len)
{
	char devs[MAX_CONSOLES][32], active[256] = "", got[MAX_CONSOLES][256], note[96];
	size_t have[MAX_CONSOLES] = {0};
	struct termios old[MAX_CONSOLES];
	struct pollfd pf[MAX_CONSOLES];
	bool saved[MAX_CONSOLES] = {0};
	long long deadline = now_ms() + (long long)timeout_s * 1000;
	int n, i, fd, answered = -1, rc = -1, err = ETIMEDOUT;

	fd = open("/sys/class/tty/console/active", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, active, sizeof(active) - 1);
		active[r > 0 ? r : 0] = '\0';
		if (close(fd) != 0)
			dbg("close console list: %s", strerror(errno));
	}
	n = ask_consoles(active, devs, MAX_CONSOLES);
	if (n == 0)
		n = ask_consoles("console", devs, MAX_CONSOLES);
	for (i = 0; i < n; i++) {
		pf[i].fd = open(devs[i], O_RDWR | O_NOCTTY | O_CLOEXEC);
		pf[i].events = POLLIN;
		if (pf[i].fd < 0)
			continue;
		if (tcgetattr(pf[i].fd, &old[i]) == 0) {
			struct termios t = old[i];

			t.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK);
			t.c_lflag |= ICANON | ECHONL;
			saved[i] = tcsetattr(pf[i].fd, TCSAFLUSH, &t) == 0;
		}
		say(pf[i].fd, prompt);
	}
	while (answered < 0) {
		long long left = deadline - now_ms();
		int r, open_fds = 0;

		for (i = 0; i < n; i++)
			open_fds += pf[i].fd >= 0;
		if (!open_fds) {
			err = ENODEV;
			break;
		}
		if (timeout_s && left <= 0)
			break;
		r = poll(pf, (nfds_t)n, timeout_s ? (int)(left > 60000 ? 60000 : left) : 60000);
		if (r < 0 && errno != EINTR) {
			err = errno;
			break;
		}
		for (i = 0; r > 0 && i < n && answered < 0; i++) {
			char c[64];
			ssize_t k;

			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			k = read(pf[i].fd, c, sizeof(c));
			if (k <= 0) { /* a console that went away: ask on the others */
				if (close(pf[i].fd) != 0)
					dbg("close %s: %s", devs[i], strerror(errno));
				pf[i].fd = -1;
				continue;
			}
			for (ssize_t j = 0; j < k; j++) {
				if (c[j] == '\n' || c[j] == '\r') {
					answered = i;
					break;
				}
				if (have[i] < sizeof(got[i]) - 1)
					got[i][have[i]++] = c[j];
			}
		}
	}
	for (i = 0; i < n; i++) {
		if (pf[i].fd < 0)
			continue;
		if (saved[i] && tcsetattr(pf[i].fd, TCSAFLUSH, &old[i]) != 0)
			dbg("restore %s: %s", devs[i], strerror(errno));
		if (answered >= 0 && i != answered) {
			text_fmt(note, sizeof(note), "\n(answered on %s)\n", devs[answered]);
			say(pf[i].fd, note);
		} else if (answered < 0) { /* the prompt's line ends before what is said next */
			say(pf[i].fd, "\n");
		}
		if (close(pf[i].fd) != 0)
			dbg("close %s: %s", devs[i], strerror(errno));
	}
	if (answered >= 0) {
		size_t l = have[answered] < len ? have[answered] : len - 1;

		memcpy(buf, got[answered], l);
		buf[l] = '\0';
		rc = (int)l;
	}
	for (i = 0; i < n; i++)
		memset(got[i], 0, sizeof(got[i]));
	if (rc < 0)
		errno = err;
	return rc;
}

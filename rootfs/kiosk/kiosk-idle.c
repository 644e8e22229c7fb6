/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kiosk-idle: wait for a visitor to leave the kiosk.
 *
 *   kiosk-idle SECONDS [DIR]
 *
 * Reads the kernel's input event devices (DIR/event*, default /dev/input) beside the compositor, which keeps
 * receiving every event: reading an evdev node does not take it from anyone. Returns 0 once there has been
 * input (a key, a pointer move or button, a touch) and then none for SECONDS. An untouched kiosk is never
 * reset. Devices that appear later (a keyboard plugged in) are opened when DIR is scanned again, every
 * RESCAN_MS; a device that goes away is closed. Exit status 2: a wrong argument; 1: DIR cannot be read at all.
 *
 * The kiosk's idle reset (rootfs/kiosk/kiosk idle) runs it as root, then restarts the browser with a fresh
 * profile. It is not the compositor's idle protocol: that one reported activity with nobody at the keyboard
 * (docs/kiosk.md).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/input.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEVICES 64
#define RESCAN_MS 2000
/* a week: more is a typo */
#define MAX_SECONDS (7L * 24 * 3600)

struct device {
	int fd;
	char name[NAME_MAX + 1];
};

static struct device devices[MAX_DEVICES];
static int ndevices;

static long long now_ms(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) {
		perror("kiosk-idle: clock_gettime");
		exit(1);
	}
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int is_open(const char *name)
{
	for (int i = 0; i < ndevices; i++)
		if (strcmp(devices[i].name, name) == 0)
			return 1;
	return 0;
}

static void close_device(int i)
{
	fprintf(stderr, "kiosk-idle: %s is gone\n", devices[i].name);
	close(devices[i].fd);
	devices[i] = devices[--ndevices];
}

/* Opens the event devices of DIR not open yet; returns -1 if DIR cannot be read. */
static int scan(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[PATH_MAX];
		int fd;

		if (strncmp(e->d_name, "event", 5) != 0 || is_open(e->d_name))
			continue;
		if (ndevices == MAX_DEVICES) {
			fprintf(stderr, "kiosk-idle: more than %d input devices: %s/%s not watched\n", MAX_DEVICES, dir,
				e->d_name);
			continue;
		}
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "kiosk-idle: cannot open %s: %s\n", path, strerror(errno));
			continue;
		}
		devices[ndevices].fd = fd;
		snprintf(devices[ndevices].name, sizeof(devices[ndevices].name), "%s", e->d_name);
		ndevices++;
		fprintf(stderr, "kiosk-idle: watching %s\n", path);
	}
	if (closedir(d) != 0)
		perror("kiosk-idle: closedir");
	return 0;
}

/* Reads what device I has; returns 1 if a visitor did something, 0 if not, -1 if the device is gone. */
static int drain(int i)
{
	struct input_event ev[64];
	int touched = 0;

	for (;;) {
		ssize_t n = read(devices[i].fd, ev, sizeof(ev));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return touched;
		if (n <= 0)
			return -1; /* ENODEV after an unplug; 0 when a test's pipe is closed */
		for (size_t k = 0; k < (size_t)n / sizeof(ev[0]); k++)
			if (ev[k].type == EV_KEY || ev[k].type == EV_REL || ev[k].type == EV_ABS)
				touched = 1;
	}
}

static int parse_seconds(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > MAX_SECONDS)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 2 ? argv[2] : "/dev/input";
	long seconds;
	long long last = 0, next_scan;
	int touched = 0;

	if (argc < 2 || argc > 3 || parse_seconds(argv[1], &seconds) != 0) {
		fprintf(stderr, "usage: kiosk-idle SECONDS [DIR]  (SECONDS: 1 to %ld; got %s)\n", MAX_SECONDS,
			argc > 1 ? argv[1] : "nothing");
		return 2;
	}
	if (scan(dir) != 0) {
		fprintf(stderr, "kiosk-idle: cannot read %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (ndevices == 0)
		fprintf(stderr, "kiosk-idle: no input device in %s yet; looking again every %d ms\n", dir, RESCAN_MS);
	next_scan = now_ms() + RESCAN_MS;
	for (;;) {
		struct pollfd p[MAX_DEVICES];
		long long now = now_ms(), wait = next_scan - now;
		int n;

		if (touched && last + seconds * 1000 - now < wait)
			wait = last + seconds * 1000 - now;
		if (wait < 0)
			wait = 0;
		for (int i = 0; i < ndevices; i++)
			p[i] = (struct pollfd){.fd = devices[i].fd, .events = POLLIN};
		n = poll(p, (nfds_t)ndevices, (int)wait);
		if (n < 0 && errno != EINTR) {
			perror("kiosk-idle: poll");
			return 1;
		}
		now = now_ms();
		/* backwards, so that closing one (the last moves into its place) skips nothing */
		for (int i = ndevices - 1; n > 0 && i >= 0; i--) {
			int r;

			if (!p[i].revents)
				continue;
			r = drain(i);
			if (r < 0)
				close_device(i);
			else if (r > 0) {
				if (!touched)
					fprintf(stderr, "kiosk-idle: input on %s: a visitor\n", devices[i].name);
				touched = 1;
				last = now;
			}
		}
		if (touched && now - last >= seconds * 1000) {
			fprintf(stderr, "kiosk-idle: no input for %ld s after a visitor's\n", seconds);
			return 0;
		}
		if (now >= next_scan) {
			if (scan(dir) != 0)
				fprintf(stderr, "kiosk-idle: cannot read %s: %s\n", dir, strerror(errno));
			next_scan = now + RESCAN_MS;
		}
	}
}

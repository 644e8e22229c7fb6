/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kiosk-keys: the kiosk's input filter. What a visitor types and points at reaches the page; no shortcut, menu
 * key or menu button reaches the browser, the compositor or the kernel's consoles.
 *
 *   kiosk-keys [--input DIR] [--uinput PATH] [--ready FILE]
 *
 * It grabs (EVIOCGRAB) every keyboard, mouse, tablet and touch screen, DIR/event* (default /dev/input) with keys,
 * relative or absolute axes, so that neither cage (libinput) nor the kernel's VT keyboard sees them, and passes
 * what is allowed through one virtual device made on PATH (default /dev/uinput), "liveunion-kiosk-input": the
 * only input cage has. Why: chromium --kiosk still answers its shortcuts (Ctrl+N opens a normal window with an
 * address bar; Ctrl+T/W/O/S/P/H/J, F12, Shift+Esc, Alt+F, F10, Shift+F10, the Menu key) and a right or middle
 * click gives menus and new tabs; no policy turns all of them off. The rules:
 * - Keys: an allowlist (passing_keys): letters, digits, the punctuation of a US/ISO keyboard, space, Enter,
 *   Backspace, Tab, Delete, Home, End, PageUp/Down, the arrows, Shift, CapsLock, NumLock, the keypad's digits,
 *   operators, dot and Enter. Dropped: Ctrl, Alt, AltGr, Super, Esc, F1-F24, Menu, Compose, Props, SysRq, Pause,
 *   ScrollLock, Insert (Shift+Insert pastes), the browser and media keys. A modifier that never arrives makes no
 *   combination, and Shift+Esc and Shift+F10 cannot happen: Esc and F10 never pass.
 * - While Ctrl, Alt or Super is held on any device, every other press is dropped too: Ctrl+N types nothing, not
 *   an 'n'. While Shift is held, Enter, the left button, keypad 0 and keypad dot are dropped: Shift+Enter on a
 *   link and Shift+click open a new browser window, Shift+KP0 is Shift+Insert (paste); and a Shift pressed while
 *   a passed Enter or left button is still down is dropped, so none becomes a Shift one on its release.
 * - No key sticks: a release or an autorepeat passes exactly when the key's press did, whatever came down in
 *   between; when a device goes away or its events overflowed (SYN_DROPPED), what it held down is released.
 * - Pointer: relative motion, the wheels (REL_WHEEL, REL_HWHEEL, their _HI_RES forms), the left button, and the
 *   absolute position (ABS_X/ABS_Y scaled to 0..32767) of a device with a left button or a touch (a tablet such
 *   as qemu's usb-tablet; not a joystick or an accelerometer). Right, middle, side, extra, forward, back, task
 *   and every other button are dropped: no context menu, no new tab, no history jumps.
 * - A touch screen (INPUT_PROP_DIRECT) is single touch made a mouse: the kernel's pointer emulation (ABS_X/Y,
 *   BTN_TOUCH) becomes the position and the left button; ABS_MT_* and BTN_TOOL_* are dropped. No multitouch (no
 *   pinch, no scrolling by dragging) and no touch long-press reaches the browser, so its long-press menu is
 *   not reached from here; were touch ever passed, that menu would be the browser's to turn off. A touchpad's
 *   touch is no click (its position is still the pointer's, its button still clicks).
 * - Events pass in batches: those that pass up to the device's SYN_REPORT, then that SYN_REPORT; a batch whose
 *   events were all dropped sends nothing.
 *
 * Devices: all at the start, then every RESCAN_MS those plugged in since; one that goes away is dropped. Our own
 * is known by its phys (with its name): a USB device chooses its name, the kernel its phys. A device that cannot
 * be grabbed is named and not forwarded (cage sees it already: through us it would come twice); a later scan
 * grabs it if it can. Exit status 2: a wrong argument; 1: no virtual device (PATH cannot be opened or made one),
 * poll failed, or the virtual device stopped taking events: the kiosk then starts no browser rather than one
 * with unfiltered input.
 *
 * Its host test (tests/unit/kiosk-keys.sh) runs these same rules on named pipes: a PATH that is no character
 * device gets the events that pass written as they are, without the uinput requests, and an input that is no
 * character device is neither asked what it is nor grabbed (a pipe answers no ioctl).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/input.h>
#include <linux/uinput.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the kernel's most (INPUT_MAX_CHAR_DEVICES): a device beyond ours would reach cage unfiltered (the service
 * gives it a descriptor each: LimitNOFILE= above 1024) */
#define MAX_DEVICES 1024
#define RESCAN_MS 2000
#define BATCH 16
#define ABS_OUT_MAX 32767
#define OUR_NAME "liveunion-kiosk-input"
#define OUR_PHYS "liveunion-kiosk-keys/uinput"
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define LONG_BITS (8 * sizeof(unsigned long))
#define BIT_LONGS(n) (((n) + LONG_BITS - 1) / LONG_BITS)
_Static_assert(sizeof(OUR_NAME) <= UINPUT_MAX_NAME_SIZE, "the virtual device's name fits");

/* The keys of typing and the left button: the only keys that pass. */
static const unsigned short passing_keys[] = {
	KEY_1,      KEY_2,         KEY_3,          KEY_4,         KEY_5,          KEY_6,         KEY_7,
	KEY_8,      KEY_9,         KEY_0,          KEY_MINUS,     KEY_EQUAL,      KEY_BACKSPACE, KEY_TAB,
	KEY_Q,      KEY_W,         KEY_E,          KEY_R,         KEY_T,          KEY_Y,         KEY_U,
	KEY_I,      KEY_O,         KEY_P,          KEY_LEFTBRACE, KEY_RIGHTBRACE, KEY_ENTER,     KEY_A,
	KEY_S,      KEY_D,         KEY_F,          KEY_G,         KEY_H,          KEY_J,         KEY_K,
	KEY_L,      KEY_SEMICOLON, KEY_APOSTROPHE, KEY_GRAVE,     KEY_LEFTSHIFT,  KEY_BACKSLASH, KEY_Z,
	KEY_X,      KEY_C,         KEY_V,          KEY_B,         KEY_N,          KEY_M,         KEY_COMMA,
	KEY_DOT,    KEY_SLASH,     KEY_RIGHTSHIFT, KEY_SPACE,     KEY_CAPSLOCK,   KEY_102ND,     KEY_HOME,
	KEY_END,    KEY_PAGEUP,    KEY_PAGEDOWN,   KEY_UP,        KEY_DOWN,       KEY_LEFT,      KEY_RIGHT,
	KEY_DELETE, KEY_NUMLOCK,   KEY_KP0,        KEY_KP1,       KEY_KP2,        KEY_KP3,       KEY_KP4,
	KEY_KP5,    KEY_KP6,       KEY_KP7,        KEY_KP8,       KEY_KP9,        KEY_KPDOT,     KEY_KPENTER,
	KEY_KPPLUS, KEY_KPMINUS,   KEY_KPASTERISK, KEY_KPSLASH,   BTN_LEFT,
};
/* Held, they make every other key a command. */
static const unsigned short commanding_keys[] = {KEY_LEFTCTRL, KEY_RIGHTCTRL, KEY_LEFTALT,
						 KEY_RIGHTALT, KEY_LEFTMETA,  KEY_RIGHTMETA};
static const unsigned short shift_keys[] = {KEY_LEFTSHIFT, KEY_RIGHTSHIFT};
/* With Shift, they open a new window. */
static const unsigned short not_with_shift[] = {KEY_ENTER, KEY_KPENTER, BTN_LEFT, KEY_KP0, KEY_KPDOT};
static const unsigned short pointer_axes[] = {REL_X, REL_Y, REL_WHEEL, REL_HWHEEL, REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES};

struct device {
	int fd;
	int evdev;   /* a character device: an input device to ask and grab, not a test's pipe */
	int grabbed; /* its events are ours and pass through the rules */
	int dropped; /* SYN_DROPPED: what it sends up to its next SYN_REPORT is incomplete */
	int pointer; /* it has a left button or a touch: its ABS_X and ABS_Y are the pointer's position */
	int direct;  /* a touch screen: its touch is a click */
	char name[NAME_MAX + 1];
	struct input_absinfo abs[ABS_Y + 1];      /* its ranges of ABS_X and ABS_Y */
	unsigned long down[BIT_LONGS(KEY_CNT)];   /* its keys held down */
	unsigned long passed[BIT_LONGS(KEY_CNT)]; /* keys whose press it passed and whose release it has not */
	int nbatch;
	struct input_event batch[BATCH];
};

struct filter {
	const char *dir;
	int out; /* the virtual device, or a test's file */
	int ndevices;
	struct device devices[MAX_DEVICES];
};

static int bit(const unsigned long *bits, unsigned int n)
{
	return (bits[n / LONG_BITS] >> (n % LONG_BITS)) & 1;
}

static void set_bit(unsigned long *bits, unsigned int n, int on)
{
	if (on)
		bits[n / LONG_BITS] |= 1UL << (n % LONG_BITS);
	else
		bits[n / LONG_BITS] &= ~(1UL << (n % LONG_BITS));
}

static int in(const unsigned short *list, size_t n, unsigned int code)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == code)
			return 1;
	return 0;
}

/* Whether one of KEYS is set, on any device, in its down bitmap (held) or in its passed one (passed down and not
 * yet released). */
static int any_key(const struct filter *f, int passed, const unsigned short *keys, size_t n)
{
	for (int i = 0; i < f->ndevices; i++)
		for (size_t k = 0; k < n; k++)
			if (bit(passed ? f->devices[i].passed : f->devices[i].down, keys[k]))
				return 1;
	return 0;
}

/* A Shift that comes down while a passed Enter or left button is still held would turn that click or Enter
 * into a Shift one on its release (a new window): it waits. */
static int press_passes(const struct filter *f, unsigned int key)
{
	if (!in(passing_keys, N(passing_keys), key) || any_key(f, 0, commanding_keys, N(commanding_keys)))
		return 0;
	if (in(shift_keys, N(shift_keys), key) && any_key(f, 1, not_with_shift, N(not_with_shift)))
		return 0;
	return !in(not_with_shift, N(not_with_shift), key) || !any_key(f, 0, shift_keys, N(shift_keys));
}

/* Decides a key event of D: 1 to pass it (a touch as the left button), 0 to drop it. */
static int pass_key(const struct filter *f, struct device *d, struct input_event *e)
{
	unsigned int key = e->code == BTN_TOUCH && d->direct ? BTN_LEFT : e->code;

	if (e->code > KEY_MAX)
		return 0;
	set_bit(d->down, e->code, e->value != 0);
	if (e->value == 1) {
		if (bit(d->passed, key) || !press_passes(f, key))
			return 0;
		set_bit(d->passed, key, 1);
	} else if (!bit(d->passed, key)) {
		return 0;
	} else if (e->value == 0) {
		set_bit(d->passed, key, 0);
	}
	e->code = (unsigned short)key;
	return 1;
}

/* ABS_X and ABS_Y pass, scaled from the device's range to the virtual device's. */
static int pass_abs(const struct device *d, struct input_event *e)
{
	const struct input_absinfo *a;
	long long range, v;

	if (!d->pointer || (e->code != ABS_X && e->code != ABS_Y))
		return 0;
	a = &d->abs[e->code];
	range = (long long)a->maximum - a->minimum;
	v = e->value < a->minimum ? a->minimum : e->value > a->maximum ? a->maximum : e->value;
	e->value = range > 0 ? (int)((v - a->minimum) * ABS_OUT_MAX / range) : 0;
	return 1;
}

/* Writes N events to the virtual device: 0, or -1 (errno set) if it did not take them all. */
static int emit(int out, const struct input_event *ev, int n)
{
	size_t len = (size_t)n * sizeof(*ev);
	ssize_t w;

	do
		w = write(out, ev, len);
	while (w < 0 && errno == EINTR);
	if (w >= 0 && (size_t)w != len)
		errno = EIO;
	return w >= 0 && (size_t)w == len ? 0 : -1;
}

/* Sends D's batch closed by a SYN_REPORT; nothing if no event of it passed. */
static int send_batch(struct filter *f, struct device *d)
{
	int n = d->nbatch;

	if (n == 0)
		return 0;
	d->batch[n++] = (struct input_event){.type = EV_SYN, .code = SYN_REPORT};
	d->nbatch = 0;
	return emit(f->out, d->batch, n);
}

/* Adds E to D's batch; a full batch goes out at once (one place kept for its SYN_REPORT). */
static int queue(struct filter *f, struct device *d, struct input_event e)
{
	if (d->nbatch == BATCH - 1 && send_batch(f, d) != 0)
		return -1;
	d->batch[d->nbatch++] = e;
	return 0;
}

/* Releases on the virtual device the keys D passed that are not down in STILL (NULL: none is). */
static int release_keys(struct filter *f, struct device *d, const unsigned long *still)
{
	for (unsigned int key = 0; key < KEY_CNT; key++) {
		if (!bit(d->passed, key) || (still && bit(still, key)))
			continue;
		set_bit(d->passed, key, 0);
		if (queue(f, d, (struct input_event){.type = EV_KEY, .code = (unsigned short)key}) != 0)
			return -1;
	}
	return send_batch(f, d);
}

/* After SYN_DROPPED: which keys are down is asked again (a pipe cannot tell: all that passed are released). */
static int resync(struct filter *f, struct device *d)
{
	int known = d->evdev && ioctl(d->fd, EVIOCGKEY(sizeof(d->down)), d->down) >= 0;

	d->dropped = 0;
	return release_keys(f, d, known ? d->down : NULL);
}

/* Runs one event of D through the rules: 0, or -1 if the virtual device failed. */
static int take(struct filter *f, struct device *d, struct input_event e)
{
	int pass = 0;

	if (e.type == EV_SYN && e.code == SYN_DROPPED)
		d->dropped = 1;
	else if (e.type == EV_SYN && e.code == SYN_REPORT)
		return d->dropped ? resync(f, d) : send_batch(f, d);
	else if (d->dropped)
		return 0;
	else if (e.type == EV_KEY)
		pass = pass_key(f, d, &e);
	else if (e.type == EV_REL)
		pass = in(pointer_axes, N(pointer_axes), e.code);
	else if (e.type == EV_ABS)
		pass = pass_abs(d, &e);
	return pass ? queue(f, d, e) : 0;
}

/* Reads what D has and runs it through the rules: 0, 1 if D is gone, -1 if the virtual device failed. */
static int drain(struct filter *f, struct device *d)
{
	struct input_event ev[64];

	for (;;) {
		ssize_t n = read(d->fd, ev, sizeof(ev));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return 1; /* ENODEV once unplugged; 0 when a test's pipe has no writer left */
		for (size_t k = 0; k < (size_t)n / sizeof(ev[0]); k++)
			if (take(f, d, ev[k]) != 0)
				return -1;
	}
}

static void close_input(int fd, const char *dir, const char *name)
{
	if (close(fd) != 0)
		fprintf(stderr, "kiosk-keys: close %s/%s: %s\n", dir, name, strerror(errno));
}

/* Takes D for ours: cage and the VT keyboard no longer see it (a test's pipe needs no grab). Input from before
 * is thrown away: cage had it. Returns -1 if D is gone; a refusal is named when REPORT is set (the first try). */
static int grab(struct filter *f, struct device *d, int report)
{
	struct input_event old[64];

	if (d->evdev && ioctl(d->fd, EVIOCGRAB, 1) != 0) {
		if (errno == ENODEV)
			return -1;
		if (report)
			fprintf(stderr, "kiosk-keys: cannot grab %s/%s: %s; not forwarded, trying again every %d ms\n",
				f->dir, d->name, strerror(errno), RESCAN_MS);
		return 0;
	}
	for (;;) {
		ssize_t n = read(d->fd, old, sizeof(old));

		if (n <= 0 && !(n < 0 && errno == EINTR))
			break;
	}
	if (d->evdev && ioctl(d->fd, EVIOCGKEY(sizeof(d->down)), d->down) < 0)
		memset(d->down, 0, sizeof(d->down));
	d->grabbed = 1;
	fprintf(stderr, "kiosk-keys: forwarding %s/%s%s\n", f->dir, d->name,
		d->evdev ? "" : " (no character device: not grabbed)");
	return 0;
}

/* Whether FD is our own virtual device, which cage must keep seeing. */
static int is_ours(int fd)
{
	char name[UINPUT_MAX_NAME_SIZE] = "", phys[64] = "";

	return ioctl(fd, EVIOCGNAME(sizeof(name) - 1), name) >= 0 &&
	       ioctl(fd, EVIOCGPHYS(sizeof(phys) - 1), phys) >= 0 && strcmp(phys, OUR_PHYS) == 0 &&
	       strcmp(name, OUR_NAME) == 0;
}

/* What kind of pointer D is, and its ranges; a test's pipe is a touch screen of our range. */
static void ask_kind(struct device *d)
{
	unsigned long keys[BIT_LONGS(KEY_CNT)] = {0}, props[BIT_LONGS(INPUT_PROP_CNT)] = {0};

	for (int c = ABS_X; c <= ABS_Y; c++)
		if (!d->evdev || ioctl(d->fd, EVIOCGABS(c), &d->abs[c]) < 0)
			d->abs[c] = (struct input_absinfo){.maximum = ABS_OUT_MAX};
	if (!d->evdev) {
		d->pointer = d->direct = 1;
		return;
	}
	if (ioctl(d->fd, EVIOCGBIT(EV_KEY, sizeof(keys)), keys) >= 0)
		d->pointer = bit(keys, BTN_LEFT) || bit(keys, BTN_TOUCH);
	if (ioctl(d->fd, EVIOCGPROP(sizeof(props)), props) >= 0)
		d->direct = bit(props, INPUT_PROP_DIRECT);
}

static void forget(struct filter *f, int i)
{
	close_input(f->devices[i].fd, f->dir, f->devices[i].name);
	f->devices[i] = f->devices[--f->ndevices];
}

/* Opens DIR/NAME as a new device if it is a keyboard, mouse, tablet or touch screen (a test's pipe counts as
 * one) and not ours, and grabs it. */
static void add_device(struct filter *f, const char *name)
{
	struct device *d = &f->devices[f->ndevices];
	unsigned long types[BIT_LONGS(EV_CNT)] = {0};
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/%s", f->dir, name) >= (int)sizeof(path))
		return;
	*d = (struct device){.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
	if (d->fd < 0 || fstat(d->fd, &st) != 0) {
		fprintf(stderr, "kiosk-keys: cannot open %s: %s\n", path, strerror(errno));
		if (d->fd >= 0)
			close_input(d->fd, f->dir, name);
		return;
	}
	d->evdev = S_ISCHR(st.st_mode);
	if (d->evdev && (ioctl(d->fd, EVIOCGBIT(0, sizeof(types)), types) < 0 || is_ours(d->fd) ||
			 !(bit(types, EV_KEY) || bit(types, EV_REL) || bit(types, EV_ABS)))) {
		close_input(d->fd, f->dir, name);
		return;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	ask_kind(d);
	f->ndevices++;
	if (grab(f, d, 1) != 0)
		forget(f, f->ndevices - 1);
}

/* Device I went away: the keys it had down are released. Returns -1 if the virtual device failed. */
static int drop_device(struct filter *f, int i)
{
	fprintf(stderr, "kiosk-keys: %s/%s is gone\n", f->dir, f->devices[i].name);
	if (release_keys(f, &f->devices[i], NULL) != 0)
		return -1;
	forget(f, i);
	return 0;
}

static int find(const struct filter *f, const char *name)
{
	for (int i = 0; i < f->ndevices; i++)
		if (strcmp(f->devices[i].name, name) == 0)
			return i;
	return -1;
}

/* Opens the devices of DIR not open yet and grabs those not grabbed yet; -1 if DIR cannot be read. */
static int scan(struct filter *f)
{
	DIR *dir = opendir(f->dir);
	struct dirent *e;

	if (!dir)
		return -1;
	while ((e = readdir(dir))) {
		int i;

		if (strncmp(e->d_name, "event", 5) != 0)
			continue;
		i = find(f, e->d_name);
		if (i >= 0 && !f->devices[i].grabbed && grab(f, &f->devices[i], 0) != 0)
			forget(f, i); /* never grabbed: no key of it passed */
		else if (i < 0 && f->ndevices == MAX_DEVICES)
			fprintf(stderr, "kiosk-keys: more than %d input devices: %s/%s not forwarded\n", MAX_DEVICES,
				f->dir, e->d_name);
		else if (i < 0)
			add_device(f, e->d_name);
	}
	if (closedir(dir) != 0)
		fprintf(stderr, "kiosk-keys: closedir %s: %s\n", f->dir, strerror(errno));
	return 0;
}

static long long now_ms(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
		return 0; /* CLOCK_MONOTONIC does not fail; were it to, rescans would only come sooner */
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

enum failure { POLL_FAILED, WRITE_FAILED };

/* Forwards until something fails; returns what (errno set). */
static enum failure run(struct filter *f)
{
	long long next_scan = now_ms() + RESCAN_MS;

	for (;;) {
		struct pollfd p[MAX_DEVICES];
		int of[MAX_DEVICES], n = 0, r;
		long long wait = next_scan - now_ms();

		for (int i = 0; i < f->ndevices; i++)
			if (f->devices[i].grabbed) {
				p[n] = (struct pollfd){.fd = f->devices[i].fd, .events = POLLIN};
				of[n++] = i;
			}
		r = poll(p, (nfds_t)n, wait < 0 ? 0 : (int)wait);
		if (r < 0 && errno != EINTR)
			return POLL_FAILED;
		/* backwards: a device dropped has the last one moved into its place, which was seen already */
		for (int k = n - 1; r > 0 && k >= 0; k--) {
			int gone = p[k].revents ? drain(f, &f->devices[of[k]]) : 0;

			if (gone < 0 || (gone > 0 && drop_device(f, of[k]) != 0))
				return WRITE_FAILED;
		}
		if (now_ms() >= next_scan) {
			if (scan(f) != 0 && errno != ENOENT)
				fprintf(stderr, "kiosk-keys: cannot read %s: %s\n", f->dir, strerror(errno));
			next_scan = now_ms() + RESCAN_MS;
		}
	}
}

/* Makes the virtual device on FD (/dev/uinput): the keys, axes and button that pass, and nothing else. Returns
 * 0, or -1 with the request that failed in *step. */
static int make_device(int fd, const char **step)
{
	static const unsigned short types[] = {EV_KEY, EV_REL, EV_ABS};
	struct uinput_setup setup = {.id = {.bustype = BUS_VIRTUAL, .version = 1}};
	struct uinput_abs_setup abs = {.absinfo = {.maximum = ABS_OUT_MAX}};
	size_t i;

	*step = "UI_SET_EVBIT on";
	for (i = 0; i < N(types); i++)
		if (ioctl(fd, UI_SET_EVBIT, types[i]) < 0)
			return -1;
	*step = "UI_SET_KEYBIT on";
	for (i = 0; i < N(passing_keys); i++)
		if (ioctl(fd, UI_SET_KEYBIT, passing_keys[i]) < 0)
			return -1;
	*step = "UI_SET_RELBIT on";
	for (i = 0; i < N(pointer_axes); i++)
		if (ioctl(fd, UI_SET_RELBIT, pointer_axes[i]) < 0)
			return -1;
	*step = "UI_ABS_SETUP on";
	for (abs.code = ABS_X; abs.code <= ABS_Y; abs.code++)
		if (ioctl(fd, UI_SET_ABSBIT, abs.code) < 0 || ioctl(fd, UI_ABS_SETUP, &abs) < 0)
			return -1;
	*step = "UI_SET_PHYS on";
	if (ioctl(fd, UI_SET_PHYS, OUR_PHYS) < 0)
		return -1;
	memcpy(setup.name, OUR_NAME, sizeof(OUR_NAME));
	*step = "UI_DEV_SETUP on";
	if (ioctl(fd, UI_DEV_SETUP, &setup) < 0)
		return -1;
	*step = "UI_DEV_CREATE on";
	return ioctl(fd, UI_DEV_CREATE) < 0 ? -1 : 0;
}

/* Opens PATH for what passes: on a character device (/dev/uinput) the virtual device is made; anything else (a
 * test's file or pipe) takes the events as they are. Returns the fd, or -1 with the step that failed in *step. */
static int open_output(const char *path, const char **step)
{
	struct stat st;
	int fd = open(path, O_WRONLY | O_CLOEXEC), e;

	*step = "cannot open";
	if (fd < 0)
		return -1;
	*step = "fstat";
	if (fstat(fd, &st) == 0 && (!S_ISCHR(st.st_mode) || make_device(fd, step) == 0))
		return fd;
	e = errno;
	if (close(fd) != 0)
		fprintf(stderr, "kiosk-keys: close %s: %s\n", path, strerror(errno));
	errno = e;
	return -1;
}

/* --input DIR, --uinput PATH, --ready FILE into DIR, PATH, FILE; -1 (named on stderr) if there is anything else. */
static int parse_args(int argc, char **argv, const char **dir, const char **path, const char **ready)
{
	for (int i = 1; i < argc; i++) {
		const char **to = !strcmp(argv[i], "--input")  ? dir :
				  !strcmp(argv[i], "--uinput") ? path :
				  !strcmp(argv[i], "--ready")  ? ready :
								 NULL;

		if (!to || i + 1 == argc || !argv[i + 1][0]) {
			fprintf(stderr, "usage: kiosk-keys [--input DIR] [--uinput PATH] [--ready FILE]  (%s: %s)\n",
				argv[i], to ? "needs a value" : "unknown argument");
			return -1;
		}
		*to = argv[++i];
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct filter f = {.dir = "/dev/input"};
	const char *path = "/dev/uinput", *ready = NULL, *step;
	int fd;

	if (parse_args(argc, argv, &f.dir, &path, &ready) != 0)
		return 2;
	/* a reader gone (a test's pipe) is a write error to report, not a silent death */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		perror("kiosk-keys: signal");
		return 1;
	}
	f.out = open_output(path, &step);
	if (f.out < 0) {
		fprintf(stderr, "kiosk-keys: %s %s: %s (no virtual device: nothing is forwarded)\n", step, path,
			strerror(errno));
		return 1;
	}
	if (scan(&f) != 0)
		fprintf(stderr, "kiosk-keys: cannot read %s: %s; looking again every %d ms\n", f.dir, strerror(errno),
			RESCAN_MS);
	else if (f.ndevices == 0)
		fprintf(stderr, "kiosk-keys: no input device in %s yet; looking again every %d ms\n", f.dir, RESCAN_MS);
	if (ready && ((fd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 || close(fd) != 0)) {
		fprintf(stderr, "kiosk-keys: cannot create %s: %s\n", ready, strerror(errno));
		return 1;
	}
	if (run(&f) == WRITE_FAILED)
		fprintf(stderr, "kiosk-keys: write %s: %s\n", path, strerror(errno));
	else
		perror("kiosk-keys: poll");
	return 1;
}

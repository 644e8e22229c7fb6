#ifndef LIVE_ASK_H
#define LIVE_ASK_H
/* Asking a person at the machine (ask.c): on every console at once. */
#include <stddef.h>

/* The console devices the kernel writes to ("/dev/tty0", "/dev/ttyS0"), from the text of
 * /sys/class/tty/console/active: at most max, each once; 0 when it names none. */
int ask_consoles(const char *active, char devs[][32], int max);
/* Show prompt on every console and read one line, not echoed, from the first that answers; the others are
 * told where the answer came from. timeout_s 0: wait for an answer. Returns its length (the line without its
 * end, in buf, NUL-terminated), or -1: no answer in time (errno ETIMEDOUT) or no console to ask on. */
int ask_secret(const char *prompt, unsigned timeout_s, char *buf, size_t len);
#endif

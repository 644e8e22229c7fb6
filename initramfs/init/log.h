#ifndef LIVE_LOG_H
#define LIVE_LOG_H
#include <stdarg.h>

/* Open every active console (/sys/class/tty/console/active) for messages. */
void log_open_consoles(void);
/* Close and open them again: a rescue shell that exits hangs up its console (it was the session
 * leader), which turns the init's own descriptors of that tty into ones that only fail. */
void log_reopen_consoles(void);
/* Send messages to this fd only (host tests, --help-keys). */
void log_use_fd(int fd);
void log_debug_enable(int on);
/* Before the live system's init runs: the kernel's rate limit on /dev/kmsg writers is put back. */
void log_handover(void);
/* Names of the active consoles (e.g. "tty0", "ttyS0"); count returned. */
int log_console_names(const char *names[], int max);

void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The one failure record: the failing function stores what it attempted and errno,
 * returns -1, and main reports it once. */
int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *fail_what(void);
int fail_errno(void);
void fail_clear(void);
#endif

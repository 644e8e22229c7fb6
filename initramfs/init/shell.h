#ifndef LIVE_SHELL_H
#define LIVE_SHELL_H
/* A busybox sh on each active console, prompt "(liveunion rescue)". Returns when the first one
 * exits (0), or -1 if no shell could be started. */
int rescue_shell(const char *why);
#endif

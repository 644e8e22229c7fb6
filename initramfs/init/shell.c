#include "shell.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "log.h"

#define MAX_SHELLS 8
#define SHELL "/bin/sh"

static void child(const char *tty, const char *why)
{
	static char *const envp[] = {"PS1=(liveunion rescue) \\w # ", "HOME=/", "TERM=linux",
				     "PATH=/bin:/sbin:/usr/bin:/usr/sbin", NULL};
	static char *const argv[] = {"sh", NULL};
	char path[64], banner[512];
	int fd, n;

	/* A session of its own so the console can become its controlling tty: job control and ^C work. */
	if (setsid() < 0)
		_exit(126);
	if (snprintf(path, sizeof(path), "/dev/%s", tty) >= (int)sizeof(path))
		_exit(126);
	fd = open(path, O_RDWR);
	if (fd < 0)
		_exit(126);
	if (ioctl(fd, TIOCSCTTY, 1) != 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(126);
	if (fd > 2 && close(fd) != 0)
		_exit(126);
	n = snprintf(banner, sizeof(banner),
		     "\nliveunion: rescue shell (%s)\nliveunion: the plan is in " LIVE_RUN "/" LIVE_PLAN
		     "; exit the shell to %s\n",
		     why, "continue");
	if (n > 0 && write(1, banner, (size_t)n) < 0)
		_exit(126);
	execve(SHELL, argv, envp);
	_exit(127);
}

int rescue_shell(const char *why)
{
	const char *names[MAX_SHELLS];
	pid_t pids[MAX_SHELLS];
	int n = log_console_names(names, MAX_SHELLS), started = 0, i, j, st;

	for (i = 0; i < n; i++) {
		/* tty0 means "the current virtual terminal"; a shell wants a real one */
		const char *tty = strcmp(names[i], "tty0") == 0 ? "tty1" : names[i];
		int dup = 0;

		if (strcmp(tty, "stderr") == 0)
			tty = "console";
		for (j = 0; j < i; j++)
			if (strcmp(names[j], names[i]) == 0)
				dup = 1;
		if (dup)
			continue;
		pids[started] = fork();
		if (pids[started] < 0) {
			msg("fork for a rescue shell on %s: %s", tty, strerror(errno));
			continue;
		}
		if (pids[started] == 0)
			child(tty, why);
		started++;
	}
	while (started > 0) {
		pid_t pid = waitpid(-1, &st, 0);
		int ours = -1;

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			return fail(errno, "wait for the rescue shell");
		for (i = 0; i < started; i++)
			if (pids[i] == pid)
				ours = i;
		if (ours < 0)
			continue; /* PID 1 reaps orphans from the shell too */
		if (WIFEXITED(st) && WEXITSTATUS(st) >= 126) {
			msg("the rescue shell %s could not start (status %d)", SHELL, WEXITSTATUS(st));
			pids[ours] = pids[--started];
			if (started == 0)
				return fail(ENOEXEC, "start a rescue shell %s", SHELL);
			continue;
		}
		/* One exit ends them all: the boot continues on every console at once. */
		for (i = 0; i < started; i++) {
			if (i == ours)
				continue;
			if (kill(pids[i], SIGKILL) != 0)
				msg("kill rescue shell %d: %s", (int)pids[i], strerror(errno));
			while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
				;
		}
		log_reopen_consoles();
		return 0;
	}
	return fail(ENOTTY, "start a rescue shell: no console");
}

/* union-readdir.c - helper of bench/union-readdir.
 *   populate DIR FIRST COUNT        create COUNT empty files fNNNNNNN from FIRST
 *   whiteout DIR FIRST COUNT        create 0/0 whiteouts with the same names
 *   kernel DIR                      list DIR with getdents64 (an overlayfs mount)
 *   lib LAYER...                    list / of the layers with the liveunion library
 * The listers print: entries, seconds, peak RSS (kB), RSS before listing (kB). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "union.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long rss0;

static void report(long n, double secs)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%ld %.3f %ld %ld\n", n, secs, ru.ru_maxrss, rss0);
}

int main(int argc, char **argv)
{
	char name[64], buf[1 << 16];
	long i, n = 0;
	double t0;

	if (argc >= 5 && (!strcmp(argv[1], "populate") || !strcmp(argv[1], "whiteout"))) {
		long first = atol(argv[3]), count = atol(argv[4]);
		int dfd = open(argv[2], O_RDONLY | O_DIRECTORY);
		if (dfd < 0)
			return perror(argv[2]), 1;
		for (i = first; i < first + count; i++) {
			snprintf(name, sizeof name, "f%07ld", i);
			if (argv[1][0] == 'p') {
				int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
				if (fd < 0 || close(fd) < 0)
					return perror(name), 1;
			} else if (mknodat(dfd, name, S_IFCHR, makedev(0, 0)) < 0) {
				return perror(name), 1;
			}
		}
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "kernel")) {
		rss0 = rss_kb();
		t0 = now();
		int fd = open(argv[2], O_RDONLY | O_DIRECTORY);
		long r;
		if (fd < 0)
			return perror(argv[2]), 1;
		while ((r = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
			for (long off = 0; off < r;) {
				unsigned short rl;
				memcpy(&rl, buf + off + 16, sizeof rl);
				const char *nm = buf + off + 19;
				if (strcmp(nm, ".") && strcmp(nm, ".."))
					n++;
				off += rl;
			}
		close(fd);
		report(n, now() - t0);
		return r < 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "lib")) {
		char err[256];
		struct lu_union *u;
		struct lu_dir *d;
		rss0 = rss_kb();
		t0 = now();
		if (!(u = lu_open(argv + 2, argc - 2, NULL, err, sizeof err)))
			return fprintf(stderr, "%s\n", err), 1;
		if (!(d = lu_opendir(u, "/")))
			return perror("lu_opendir"), 1;
		while (lu_readdir(d))
			n++;
		if (errno)
			perror("lu_readdir");
		lu_closedir(d);
		lu_close(u);
		report(n, now() - t0);
		return 0;
	}
	fprintf(stderr, "usage: see the comment at the top of union-readdir.c\n");
	return 2;
}

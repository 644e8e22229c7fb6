/*
 * Minimal getconf for the test layer: the busybox live root has none.  `getconf NAME_MAX PATH` prints statfs
 * f_namelen, which is what glibc's pathconf(_PC_NAME_MAX) and so GNU getconf report; musl's pathconf returns the
 * constant 255 without asking the kernel, so calling it here would hide the very bug the NAME_MAX test is about.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

int main(int argc, char **argv)
{
	struct statfs s;

	if (argc != 3 || (strcmp(argv[1], "NAME_MAX") != 0 && strcmp(argv[1], "_POSIX_NAME_MAX") != 0)) {
		fputs("usage: getconf NAME_MAX PATH\n", stderr);
		return 2;
	}
	if (statfs(argv[2], &s) != 0) {
		fprintf(stderr, "getconf: statfs %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	return printf("%ld\n", (long)s.f_namelen) < 0;
}

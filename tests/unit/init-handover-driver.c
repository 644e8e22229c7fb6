/* Test driver for init-handover.sh, run chrooted into a fake initramfs: hands over to the init named by
 * argv[1] in /newroot with the init's real handover(). As that init (argv[1] "--as-init") it says so. */
#include <stdio.h>
#include <string.h>

#include "handover.h"
#include "log.h"
#include "util.h"

int main(int argc, char **argv)
{
	static struct plan p;
	char *args[] = {p.init, "--as-init", NULL};
	int rc;

	if (argc == 2 && strcmp(argv[1], "--as-init") == 0) {
		printf("the new init runs as %s\n", argv[0]);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s INIT (run as / of a fake initramfs with /newroot)\n", argv[0]);
		return 2;
	}
	log_use_fd(1);
	text_fmt(p.newroot, sizeof(p.newroot), "/newroot");
	text_fmt(p.init, sizeof(p.init), "%s", argv[1]);
	rc = handover(&p, args);
	msg("handover returned %d: %s: %s", rc, fail_what(), strerror(fail_errno()));
	return 3;
}

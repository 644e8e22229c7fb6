/* cmd_status.c - `liveunion status`: the executed boot plan, readable. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "liveunion/contract.h"
#include "tool.h"

#define PLAN LIVE_RUN "/" LIVE_PLAN

int cmd_status(int argc, char **argv)
{
	const char *plan = PLAN;
	char line[4096];
	FILE *f;
	int n = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--plan") && i + 1 < argc) {
			plan = argv[++i];
		} else {
			printf("usage: " PROG " status [--plan FILE]\n"
			       "Print the plan the init carried out (key=value lines in " PLAN ").\n");
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}
	if (!(f = fopen(plan, "r"))) {
		if (errno == ENOENT)
			fprintf(stderr, PROG " status: not a live system (%s not found)\n", plan);
		else
			fprintf(stderr, PROG " status: %s: %s\n", plan, strerror(errno));
		return 1;
	}
	printf("liveunion live system (%s)\n", plan);
	while (fgets(line, sizeof line, f)) {
		char *eq, *v;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (!(eq = strchr(line, '='))) {
			printf("  %s\n", line);
			continue;
		}
		*eq = '\0';
		v = eq + 1;
		printf("  %-16s %s\n", line, *v ? v : "(empty)");
		n++;
	}
	if (ferror(f)) {
		fprintf(stderr, PROG " status: reading %s: %s\n", plan, strerror(errno));
		fclose(f);
		return 1;
	}
	fclose(f);
	if (!n) {
		fprintf(stderr, PROG " status: %s holds no key=value lines\n", plan);
		return 1;
	}
	return 0;
}

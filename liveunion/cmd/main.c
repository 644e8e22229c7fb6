/* main.c - `liveunion`: one command for the live system and the build host. */
#include <stdio.h>
#include <string.h>

#include "liveunion/contract.h"
#include "tool.h"

/* New subcommands are one line here and one file beside. */
static const struct subcmd cmds[] = {
	{"status", cmd_status, NULL, "show the plan the live system booted with (" LIVE_RUN "/" LIVE_PLAN ")"},
	{"changes", cmd_changes, NULL, "list what a persistence store changed relative to its base layers"},
	{"flatten", cmd_flatten, NULL, "write the merged tree of a layer stack to a directory or squashfs"},
	{"save", cmd_save, NULL, "write this session's changes as a new squashfs layer (into the store)"},
	{"store", cmd_store, NULL, "the persistence store: status, passphrase, backup, restore, reset, grow"},
	{"update", cmd_update, NULL, "an A/B stick's boot choice: status, mark this boot good, roll back"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'" PROG " COMMAND --help' describes each command.\n");
}

int subcmd_run(const char *who, const struct subcmd *t, size_t n, void (*usage)(FILE *), int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(argv[1], t[i].name))
			return t[i].run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n", who, argv[1]);
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	return subcmd_run(PROG, cmds, sizeof cmds / sizeof cmds[0], usage, argc, argv);
}

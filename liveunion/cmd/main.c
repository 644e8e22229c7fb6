/* main.c - `liveunion`: one command for the live system and the build host. */
#include <stdio.h>
#include <string.h>

#include "liveunion/contract.h"
#include "tool.h"

struct subcmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
};

/* New subcommands are one line here and one file beside. */
static const struct subcmd cmds[] = {
	{"status", cmd_status, "show the plan the live system booted with (" LIVE_RUN "/" LIVE_PLAN ")"},
	{"changes", cmd_changes, "list what a persistence store changed relative to its base layers"},
	{"flatten", cmd_flatten, "write the merged tree of a layer stack to a directory or squashfs"},
	{"save", cmd_save, "write this session's changes as a new squashfs layer (into the store)"},
	{"store", cmd_store, "the persistence store: status, passphrase, backup, restore, reset, grow"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'" PROG " COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, PROG ": unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

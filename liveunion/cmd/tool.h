/* tool.h - shared pieces of the `liveunion` subcommands. */
#ifndef LIVEUNION_TOOL_H
#define LIVEUNION_TOOL_H
#include <stdio.h>

#include "union.h"

#define PROG "liveunion"

/* A table of subcommands (`liveunion COMMAND`, `liveunion store COMMAND`): ARGS may be NULL. */
struct subcmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *args, *help;
};
/* main.c: runs the subcommand argv[1] names in T (N entries); with none, --help or -h prints USAGE (to stderr and
 * exit status 2 when argv[1] is missing); an unknown one is named after WHO ("liveunion", "liveunion store"). */
int subcmd_run(const char *who, const struct subcmd *t, size_t n, void (*usage)(FILE *), int argc, char **argv);

int cmd_status(int argc, char **argv);
int cmd_changes(int argc, char **argv);
int cmd_flatten(int argc, char **argv);
int cmd_save(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_update(int argc, char **argv);

/* layers.c: turn command-line layer arguments (directories, stores, squashfs or
 * ext4 images) into directories; images are mounted read-only in a private
 * mount namespace (root) or unpacked with unsquashfs (squashfs, not root). */
int layer_resolve(const char *arg, char *dir, size_t sz, int *is_store); /* 1 store, 2 other image */
/* 1 if DIR plausibly is an overlay upper directory (see layers.c). */
int layer_looks_like_upper(const char *dir, int is_store, char *why, size_t whysz);
void layers_cleanup(void);

/* tree.c */
void put_path(FILE *f, const char *path, int machine);
int copy_xattrs(const char *from, const char *to, unsigned ns, int *lost);
int xattrs_equal(const char *a, const char *b, unsigned ns);
int files_equal(const char *a, const char *b);
/* --trusted / --userxattr / --no-redirect; returns 1 if ARG was one of them */
int parse_union_opt(const char *arg, struct lu_opts *o);
#endif

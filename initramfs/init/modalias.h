#ifndef LIVE_MODALIAS_H
#define LIVE_MODALIAS_H
#include <stddef.h>

/* The initramfs' module index: modules.alias and modules.dep as depmod writes them, parsed in place
 * (the texts are modified and must outlive the index). Pure: unit-tested on the host. */
#define MOD_NAME_LEN 64
#define MOD_MAX_DEPS 32

struct mod_alias {
	const char *pattern; /* fnmatch pattern, e.g. pci:v00008086d*sv*sd*bc01sc06i01* */
	const char *module;  /* module name as depmod writes it (underscores) */
};

struct mod_entry {
	const char *path; /* relative to /lib/modules/RELEASE, e.g. kernel/drivers/ata/ahci.ko.xz */
	char name[MOD_NAME_LEN];
	int ndeps;
	int dep[MOD_MAX_DEPS]; /* indexes into entries, as listed by depmod (the last one loads first) */
};

struct mod_index {
	struct mod_alias *alias;
	int nalias;
	struct mod_entry *entry;
	int nentry;
};

/* The module name of a path or name: basename without .ko[.xz|.zst|.gz], '-' as '_'. -1 if it does not fit. */
int mod_name_of(const char *path, char *name, size_t len);
/* Parse both texts (modified in place); the arrays are malloc'd. 0, or -1 with the line in err. */
int mod_index_parse(struct mod_index *ix, char *alias_text, char *dep_text, char *err, size_t elen);
void mod_index_free(struct mod_index *ix);
/* Index of a module by name (either spelling, '-' or '_'), or -1. */
int mod_find(const struct mod_index *ix, const char *name);
/* Modules whose alias pattern matches modalias: their indexes into entry[], each once, in the order of
 * modules.alias; at most max. An alias naming a module absent from modules.dep is skipped. */
int mod_match(const struct mod_index *ix, const char *modalias, int out[], int max);
/* The load order for module m: its dependencies (each once, deepest first), then m. At most max;
 * -1 when the order does not fit or modules.dep is circular. */
int mod_load_order(const struct mod_index *ix, int m, int out[], int max);
/* Whether a path names a compressed module the kernel must decompress (MODULE_INIT_COMPRESSED_FILE). */
int mod_compressed(const char *path);
/* The options the kernel command line gives module (its module.param[=value] words, '-' and '_' alike, up to
 * "--"), as finit_module takes them: "param=value param2" in out, in command-line order (the kernel keeps the
 * last of a repeated one). modprobe does the same from /proc/cmdline; the kernel applies such words itself only
 * to built-in code. 0, or -1 when some did not fit in len (those are left out). */
int mod_options(const char *cmdline, const char *module, char *out, size_t len);
#endif

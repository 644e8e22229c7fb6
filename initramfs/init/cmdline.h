#ifndef LIVE_CMDLINE_H
#define LIVE_CMDLINE_H
#include <stdbool.h>
#include <stddef.h>

enum key_type { T_FLAG, T_UINT, T_SIZE, T_STRING, T_ENUM, T_PATH, T_MEDIUM };

enum key_id {
	K_MEDIUM,
	K_TIMEOUT,
	K_SIZE,
	K_TORAM,
	K_BREAK,
	K_PANIC,
	K_INIT,
	K_LAYERS,
	K_PERSIST,
	K_VERIFY,
	K_CHECK,
	K_DEBUG,
	K_PERSISTRO,
	K_PERSISTRESET,
	K_PERSISTPATHS,
	K_ISO,
	K_PERSISTTIMEOUT,
	K_FETCH,
	K_NBD,
	K_COUNT
};

struct key_def {
	const char *name; /* without the "live." prefix */
	enum key_type type;
	const char *def;            /* default as it would be written on the command line */
	const char *help;           /* one line */
	unsigned long long max;     /* T_UINT: largest accepted value */
	const char *const *choices; /* T_ENUM: the accepted names, NULL-terminated (help lists them) */
};

/* x86 kernels keep at most 2048 bytes of command line; live.verify= holds ~75 per layer. */
#define VALUE_MAX 2048

/* A size is either a percentage of RAM or a byte count. */
struct size_spec {
	bool percent;
	unsigned long long n;
};

struct value {
	bool set;              /* given on the command line and valid */
	bool flag;             /* T_FLAG */
	unsigned long long u;  /* T_UINT */
	struct size_spec size; /* T_SIZE */
	int choice;            /* T_ENUM: index in the key's choices, -1 when empty */
	char s[VALUE_MAX];     /* T_STRING, T_ENUM, T_PATH, T_MEDIUM (and the text of every type) */
};

struct cmdline {
	struct value v[K_COUNT];
	/* Two keys of the kernel's and PXE's own, read for network boot (net.c): ip= as
	 * Documentation/admin-guide/nfs/nfsroot.rst writes it, and BOOTIF= (the MAC the PXE ROM booted from, as
	 * pxelinux and iPXE pass it). The last of each wins; "" when absent. */
	char ip[VALUE_MAX];
	char bootif[64];
	int warnings;
};

typedef void (*warn_fn)(void *ctx, const char *text);

extern const struct key_def key_table[K_COUNT];

/* Parse a kernel command line (the text of /proc/cmdline). Never fails: every problem becomes
 * a warning through warn (may be NULL) and the key keeps its default. */
void cmdline_parse(const char *text, struct cmdline *out, warn_fn warn, void *ctx);

/* The next word of a kernel command line at *p, as the kernel splits it (spaces between double quotes belong to
 * the word; the quotes are left in), its length in *len; *p moves past it. NULL when only spaces are left. */
const char *cmdline_word(const char **p, size_t *len);
/* "50%", "512M", "2G", "1048576", "64k" -> spec; -1 on anything else. */
int cmdline_size_parse(const char *s, struct size_spec *out);
/* Resolve a size against the amount of RAM. */
unsigned long long cmdline_size_resolve(const struct size_spec *s, unsigned long long mem_total);
/* The key table as text (for `init --help-keys` and the docs/boot.md check). */
size_t cmdline_help(char *buf, size_t len);
#endif

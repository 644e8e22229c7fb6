#include "cmdline.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "liveunion/contract.h"

/* The boot steps in their order (enum step_id): live.break= stops before one. */
static const char *const break_choices[] = {"medium", "layers", "toram", "store", "upper", "overlay", "switch", NULL};

/* Every live.* key the init understands. The parameter list of docs/boot.md is generated from
 * `init --help-keys`, which prints exactly this table (kept as written: one key per entry). */
/* clang-format off */
const struct key_def key_table[K_COUNT] = {
	[K_MEDIUM] = {"medium", T_MEDIUM, "LABEL=LIVEUNION",
		"boot medium: UUID=<16 digits of the ISO9660 modification date, hyphens ignored> or LABEL=<volume id>", 0, NULL},
	[K_TIMEOUT] = {"timeout", T_UINT, "30", "seconds to wait for the medium before the rescue shell (at least 1: 0 is raised to 1, said)", 3600, NULL},
	[K_SIZE] = {"size", T_SIZE, "50%", "size of the tmpfs that holds the changes: N% of RAM or bytes with k/M/G suffix; clamped, said, to 4 MiB at least and the RAM at most", 0, NULL},
	[K_TORAM] = {"toram", T_FLAG, "0", "copy the layers into RAM, then release the medium (normal boot if RAM is short)", 0, NULL},
	[K_BREAK] = {"break", T_ENUM, "",
		"rescue shell before a step; the boot continues when it exits", 0, break_choices},
	[K_PANIC] = {"panic", T_FLAG, "0", "on failure print the report, then exit PID 1 so the kernel panics (no shell)", 0, NULL},
	[K_INIT] = {"init", T_PATH, "/sbin/init", "program started in the live root", 0, NULL},
	[K_LAYERS] = {"layers", T_STRING, "",
		"comma-separated layers to stack (10-base,20-desktop or base,desktop); -name excludes one (-20-desktop); "
		"empty: every live/NN-name.squashfs and every layer saved in the store (liveunion save)", 0, NULL},
	[K_PERSIST] = {"persist", T_STRING, "",
		"persistence store: empty/auto = a partition labelled " STORE_LABEL " or a " STORE_IMAGE " on the boot disk only; "
		"off (tmpfs; the auto store still gives its saved layers, read-only); LABEL=x, UUID=x or PARTUUID=x on any "
		"disk; file:PATH (ext4 image on the boot disk's FAT/exFAT)", 0, NULL},
	[K_VERIFY] = {"verify", T_STRING, "",
		"dm-verity root hashes, name:hex,... (the boot menus carry them): every layer is mounted through dm-verity "
		"and must be listed or carry a root hash signed by a key the kernel trusts (NAME.roothash.p7s); off: no "
		"verification (a warning); empty: unverified (a warning)", 0, NULL},
	[K_CHECK] = {"check", T_FLAG, "0",
		"read every layer fully at boot (through dm-verity when verifying) and stop naming a layer that fails", 0, NULL},
	[K_DEBUG] = {"debug", T_FLAG, "0", "more messages from the init", 0, NULL},
	[K_PERSISTRO] = {"persist.ro", T_FLAG, "0", "the store is an extra read-only lower layer; changes go to tmpfs", 0, NULL},
	[K_PERSISTRESET] = {"persist.reset", T_FLAG, "0",
		"move the store's previous changes aside to a dated directory (never deleted) and start fresh", 0, NULL},
	[K_PERSISTPATHS] = {"persist.paths", T_STRING, "",
		"only these directories persist (e.g. /home,/etc/ssh), the rest is volatile; empty: the store's "
		STORE_VDIR "/" STORE_PATHS_CONF " (one per line), else everything persists", 0, NULL},
	[K_ISO] = {"iso", T_STRING, "",
		"boot the ISO as a file: its path on a partition of any disk (ext2/3/4, FAT, exFAT), as a multi-boot "
		"stick's GRUB passes it (loopback.cfg); the ISO in it must match live.medium=; persistence auto looks "
		"beside it", 0, NULL},
	[K_PERSISTTIMEOUT] = {"persist.timeout", T_UINT, "0",
		"seconds to wait for the passphrase of an encrypted store (LUKS2) before booting with tmpfs; 0: wait for it",
		86400, NULL},
	[K_FETCH] = {"fetch", T_STRING, "",
		"network boot: http:// URL(s) of a served image (./build.sh netboot), comma-separated, tried from a random "
		"one on; its layers and hash trees are downloaded into RAM, then mounted through dm-verity; the network "
		"comes up by DHCP, or ip= (static too), preferring BOOTIF=", 0, NULL},
	[K_NBD] = {"nbd", T_STRING, "",
		"network boot for little RAM: HOST[:PORT]/EXPORT of nbd-server (port 10809 by default); the ISO is read "
		"as a network block device, its layers through dm-verity; what happens when the server goes away: docs/netboot.md",
		0, NULL},
};
/* clang-format on */

static const char *const type_names[] = {
	[T_FLAG] = "flag", [T_UINT] = "uint", [T_SIZE] = "size",     [T_STRING] = "string",
	[T_ENUM] = "enum", [T_PATH] = "path", [T_MEDIUM] = "medium",
};

int cmdline_size_parse(const char *s, struct size_spec *out)
{
	unsigned long long n = 0, mul = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (~0ULL - 9) / 10)
			return -1;
		n = n * 10 + (unsigned long long)(*p - '0');
	}
	if (strcmp(p, "%") == 0) {
		if (n < 1 || n > 100)
			return -1;
		out->percent = true;
		out->n = n;
		return 0;
	}
	if (*p != '\0') {
		switch (*p) {
		case 'k':
		case 'K': mul = 1ULL << 10; break;
		case 'm':
		case 'M': mul = 1ULL << 20; break;
		case 'g':
		case 'G': mul = 1ULL << 30; break;
		default: return -1;
		}
		if (p[1] != '\0')
			return -1;
	}
	if (n == 0 || n > ~0ULL / mul)
		return -1;
	out->percent = false;
	out->n = n * mul;
	return 0;
}

unsigned long long cmdline_size_resolve(const struct size_spec *s, unsigned long long mem_total)
{
	if (!s->percent)
		return s->n;
	return mem_total / 100 * s->n;
}

static int parse_flag(const char *v, bool *out)
{
	static const char *const yes[] = {"1", "y", "yes", "on", "true"};
	static const char *const no[] = {"0", "n", "no", "off", "false"};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static int parse_uint(const char *v, unsigned long long max, unsigned long long *out)
{
	unsigned long long n = 0;

	if (!*v)
		return -1;
	for (; *v; v++) {
		if (!isdigit((unsigned char)*v) || n > (max - (unsigned long long)(*v - '0')) / 10)
			return -1;
		n = n * 10 + (unsigned long long)(*v - '0');
	}
	*out = n;
	return 0;
}

static int valid_medium(const char *v)
{
	if (strncmp(v, "UUID=", 5) == 0) {
		int digits = 0;

		for (v += 5; *v; v++) {
			if (*v == '-')
				continue;
			if (!isdigit((unsigned char)*v))
				return -1;
			digits++;
		}
		return digits == 16 ? 0 : -1;
	}
	if (strncmp(v, "LABEL=", 6) == 0)
		return (v[6] != '\0' && strlen(v + 6) <= 32) ? 0 : -1;
	return -1;
}

static const char *want_text(enum key_type t)
{
	switch (t) {
	case T_FLAG: return "want nothing, 1/0, yes/no or on/off";
	case T_UINT: return "want a whole number";
	case T_SIZE: return "want N% (1-100) or a byte count with optional k/M/G suffix";
	case T_ENUM: return "want one of the listed names";
	case T_PATH: return "want an absolute path";
	case T_MEDIUM: return "want UUID=<16 digits> or LABEL=<at most 32 characters>";
	case T_STRING: break;
	}
	return "value too long";
}

/* Set v from text; -1 if text is not a valid value of this key. */
static int set_value(enum key_id k, const char *text, bool has_eq, struct value *v)
{
	const struct key_def *d = &key_table[k];
	struct value nv;
	int i;

	memset(&nv, 0, sizeof(nv));
	if (strlen(text) >= sizeof(nv.s))
		return -1;
	memcpy(nv.s, text, strlen(text) + 1);
	switch (d->type) {
	case T_FLAG:
		if (!has_eq)
			nv.flag = true;
		else if (parse_flag(text, &nv.flag) != 0)
			return -1;
		break;
	case T_UINT:
		if (!has_eq || parse_uint(text, d->max, &nv.u) != 0)
			return -1;
		break;
	case T_SIZE:
		if (!has_eq || cmdline_size_parse(text, &nv.size) != 0)
			return -1;
		break;
	case T_ENUM:
		nv.choice = -1;
		for (i = 0; text[0] && d->choices[i] && nv.choice < 0; i++)
			if (strcmp(text, d->choices[i]) == 0)
				nv.choice = i;
		if (!has_eq || (text[0] != '\0' && nv.choice < 0))
			return -1;
		break;
	case T_PATH:
		if (!has_eq || text[0] != '/')
			return -1;
		break;
	case T_MEDIUM:
		if (!has_eq || valid_medium(text) != 0)
			return -1;
		break;
	case T_STRING:
		if (!has_eq)
			return -1;
		break;
	}
	*v = nv;
	return 0;
}

static void warnf(struct cmdline *c, warn_fn warn, void *ctx, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void warnf(struct cmdline *c, warn_fn warn, void *ctx, const char *fmt, ...)
{
	char text[VALUE_MAX * 2 + 200];
	va_list ap;
	int n;

	c->warnings++;
	if (!warn)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n >= 0)
		warn(ctx, text);
}

static void apply(struct cmdline *c, char *tok, warn_fn warn, void *ctx)
{
	char *eq = strchr(tok, '=');
	const char *name = tok + 5, *val = eq ? eq + 1 : "";
	int k;

	if (eq)
		*eq = '\0';
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(name, key_table[k].name) == 0)
			break;
	if (k == K_COUNT) {
		warnf(c, warn, ctx, "unknown key live.%s ignored", name);
		return;
	}
	/* The last occurrence wins, even a bad one: it is reset to the default, so what the user
	 * wrote last is never silently overridden by an earlier value. */
	if (set_value((enum key_id)k, val, eq != NULL, &c->v[k]) != 0) {
		warnf(c, warn, ctx, "live.%s: bad value '%s' (%s), using the default '%s'", name, eq ? val : "(none)",
		      want_text(key_table[k].type), key_table[k].def);
		if (set_value((enum key_id)k, key_table[k].def, true, &c->v[k]) != 0)
			memset(&c->v[k], 0, sizeof(c->v[k]));
		c->v[k].set = false;
		return;
	}
	c->v[k].set = true;
}

const char *cmdline_word(const char **p, size_t *len)
{
	const char *s = *p, *w;
	bool quoted = false;

	while (*s && isspace((unsigned char)*s))
		s++;
	if (!*s) {
		*p = s;
		return NULL;
	}
	for (w = s; *s && (quoted || !isspace((unsigned char)*s)); s++)
		if (*s == '"')
			quoted = !quoted;
	*len = (size_t)(s - w);
	*p = s;
	return w;
}

void cmdline_parse(const char *text, struct cmdline *out, warn_fn warn, void *ctx)
{
	char tok[VALUE_MAX + 64];
	const char *p = text, *w;
	size_t wlen;
	int k;

	memset(out, 0, sizeof(*out));
	for (k = 0; k < K_COUNT; k++)
		if (set_value((enum key_id)k, key_table[k].def, true, &out->v[k]) != 0)
			warnf(out, warn, ctx, "live.%s: built-in default '%s' does not parse", key_table[k].name,
			      key_table[k].def);
	while ((w = cmdline_word(&p, &wlen))) {
		size_t n = 0, i;
		bool too_long = false;

		for (i = 0; i < wlen; i++) {
			if (w[i] == '"')
				continue;
			if (n + 1 < sizeof(tok))
				tok[n++] = w[i];
			else
				too_long = true;
		}
		tok[n] = '\0';
		/* Everything after "--" is for the init of the live root, not for us. */
		if (strcmp(tok, "--") == 0)
			break;
		if (strncmp(tok, "ip=", 3) == 0 || strncmp(tok, "BOOTIF=", 7) == 0) {
			bool ip = tok[0] == 'i';
			char *dst = ip ? out->ip : out->bootif;
			size_t len = ip ? sizeof(out->ip) : sizeof(out->bootif), vlen = strlen(tok + (ip ? 3 : 7));

			if (too_long || vlen >= len)
				warnf(out, warn, ctx, "%s: value too long, ignored", ip ? "ip=" : "BOOTIF=");
			else
				memcpy(dst, tok + (ip ? 3 : 7), vlen + 1);
			continue;
		}
		if (strncmp(tok, "live.", 5) != 0)
			continue;
		if (too_long) {
			char name[40];
			size_t i;

			for (i = 0; i + 1 < sizeof(name) && tok[i] && tok[i] != '='; i++)
				name[i] = tok[i];
			name[i] = '\0';
			warnf(out, warn, ctx, "%s: value too long (at most %d characters), ignored", name,
			      VALUE_MAX - 1);
			continue;
		}
		apply(out, tok, warn, ctx);
	}
}

size_t cmdline_help(char *buf, size_t len)
{
	size_t used = 0;
	int k, n;

	n = snprintf(buf, len, "key\ttype\tdefault\thelp\n");
	if (n < 0)
		return 0;
	used = (size_t)n < len ? (size_t)n : len;
	for (k = 0; k < K_COUNT; k++) {
		const struct key_def *d = &key_table[k];

		const char *const *c;

		n = snprintf(buf + used, len - used, "live.%s\t%s\t%s\t%s", d->name, type_names[d->type],
			     d->def[0] ? d->def : "(empty)", d->help);
		if (n < 0)
			break;
		used += (size_t)n < len - used ? (size_t)n : len - used;
		for (c = d->choices; c && *c; c++) {
			n = snprintf(buf + used, len - used, "%s%s", c == d->choices ? ": " : "|", *c);
			if (n < 0)
				return used;
			used += (size_t)n < len - used ? (size_t)n : len - used;
		}
		n = snprintf(buf + used, len - used, "\n");
		if (n < 0)
			break;
		used += (size_t)n < len - used ? (size_t)n : len - used;
	}
	return used;
}

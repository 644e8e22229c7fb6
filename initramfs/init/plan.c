#include "plan.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room the running system needs besides the RAM copy of the layers. */
#define TORAM_RESERVE (64ULL << 20)

const char *step_name(enum step_id s)
{
	return key_table[K_BREAK].choices[s];
}

static void copy(char *dst, size_t len, const char *src)
{
	if (snprintf(dst, len, "%s", src) < 0)
		dst[0] = '\0';
}

void plan_make(const struct cmdline *c, const struct facts *f, const char *run_live, const char *newroot,
	       struct plan *p)
{
	memset(p, 0, sizeof(*p));
	copy(p->medium_spec, sizeof(p->medium_spec), c->v[K_MEDIUM].s);
	if (medium_want_parse(p->medium_spec, &p->want) != 0) {
		/* cmdline.c validated it; only a broken default gets here */
		copy(p->medium_spec, sizeof(p->medium_spec), "LABEL=LIVEUNION");
		if (medium_want_parse(p->medium_spec, &p->want) != 0)
			p->want.value[0] = '\0';
	}
	p->timeout = (unsigned)c->v[K_TIMEOUT].u;
	p->size = c->v[K_SIZE].size;
	p->toram = c->v[K_TORAM].flag;
	p->panic = c->v[K_PANIC].flag;
	p->check = c->v[K_CHECK].flag;
	p->debug = c->v[K_DEBUG].flag;
	p->break_step = c->v[K_BREAK].choice < 0 ? S_NONE : c->v[K_BREAK].choice;
	copy(p->init, sizeof(p->init), c->v[K_INIT].s);
	copy(p->layer_filter, sizeof(p->layer_filter), c->v[K_LAYERS].s);
	copy(p->persist, sizeof(p->persist), c->v[K_PERSIST].s);
	copy(p->verify, sizeof(p->verify), c->v[K_VERIFY].s);
	p->verify_mode = !p->verify[0] ? VERIFY_NONE : strcmp(p->verify, "off") == 0 ? VERIFY_OFF : VERIFY_ON;
	copy(p->persist_flags, sizeof(p->persist_flags),
	     c->v[K_PERSISTRO].flag ? (c->v[K_PERSISTRESET].flag ? "ro,reset" : "ro") : (c->v[K_PERSISTRESET].flag ? "reset" : ""));
	copy(p->persist_paths, sizeof(p->persist_paths), c->v[K_PERSISTPATHS].s);
	copy(p->run_live, sizeof(p->run_live), run_live);
	copy(p->newroot, sizeof(p->newroot), newroot);
	p->facts = *f;
	p->upper_bytes = size_resolve(&p->size, f->mem_total);
	copy(p->upper_kind, sizeof(p->upper_kind), "tmpfs");
	copy(p->medium_fstype, sizeof(p->medium_fstype), "iso9660");
}

/* NN-name.squashfs with a name that is safe in an overlay lowerdir list (no ':' ',' '\\'). */
static int layer_stem(const char *file, char *stem, size_t len)
{
	size_t n = strlen(file), i;
	const size_t ext = sizeof(".squashfs") - 1;

	if (n <= ext + 3 || strcmp(file + n - ext, ".squashfs") != 0)
		return -1;
	n -= ext;
	if (!isdigit((unsigned char)file[0]) || !isdigit((unsigned char)file[1]) || file[2] != '-' || n >= len)
		return -1;
	for (i = 3; i < n; i++)
		if (!isalnum((unsigned char)file[i]) && !strchr("._+-", file[i]))
			return -1;
	memcpy(stem, file, n);
	stem[n] = '\0';
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct layer *)a)->name, ((const struct layer *)b)->name);
}

/* A live.layers= entry names a layer by its whole stem (20-desktop) or without the number (desktop). */
static bool entry_names(const char *entry, size_t len, const char *stem)
{
	size_t n = strlen(stem);

	return (len == n && strncmp(entry, stem, n) == 0) || (len == n - 3 && strncmp(entry, stem + 3, len) == 0);
}

/* Whether an include (want_exclude false) or an exclude entry of the filter names stem. */
static bool in_filter(const char *filter, const char *stem, bool want_exclude)
{
	const char *p = filter;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		bool ex = l > 0 && p[0] == '-';

		if (l > 0 && ex == want_exclude && entry_names(p + ex, l - ex, stem))
			return true;
		p += l + (e ? 1 : 0);
	}
	return false;
}

static bool filter_has_includes(const char *filter)
{
	const char *p = filter;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l > 0 && p[0] != '-')
			return true;
		p += l + (e ? 1 : 0);
	}
	return false;
}

static int errf(char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (elen && vsnprintf(err, elen, fmt, ap) < 0)
		err[0] = '\0';
	va_end(ap);
	return -1;
}

int plan_set_layers(struct plan *p, const char *const files[], int n, char *err, size_t elen)
{
	static char stems[MAX_LAYERS * 4][64];
	int i, j, count = 0, nstems = 0;
	const char *f;
	bool includes = filter_has_includes(p->layer_filter);
	size_t xl = 0;

	p->layers_excluded[0] = '\0';
	for (i = 0; i < n; i++) {
		struct layer *l;
		char stem[64];

		if (layer_stem(files[i], stem, sizeof(stem)) != 0)
			continue;
		if (nstems < (int)(sizeof(stems) / sizeof(stems[0])))
			memcpy(stems[nstems++], stem, strlen(stem) + 1);
		if ((includes && !in_filter(p->layer_filter, stem, false)) || in_filter(p->layer_filter, stem, true)) {
			int w = snprintf(p->layers_excluded + xl, sizeof(p->layers_excluded) - xl, "%s%s", xl ? "," : "", stem);

			if (w > 0 && (size_t)w < sizeof(p->layers_excluded) - xl)
				xl += (size_t)w;
			continue;
		}
		if (count == MAX_LAYERS)
			return errf(err, elen, "more than %d layers", MAX_LAYERS);
		l = &p->layer[count++];
		memset(l, 0, sizeof(*l));
		memcpy(l->name, stem, strlen(stem) + 1);
		l->loop = l->hash_loop = l->dm_minor = -1;
		if (snprintf(l->file, sizeof(l->file), "%s/medium/live/%s", p->run_live, files[i]) >= (int)sizeof(l->file) ||
		    snprintf(l->hash_file, sizeof(l->hash_file), "%s/medium/live/%s.verity", p->run_live, stem) >=
			    (int)sizeof(l->hash_file) ||
		    snprintf(l->dir, sizeof(l->dir), "%s/layers/%s", p->run_live, stem) >= (int)sizeof(l->dir))
			return errf(err, elen, "path of layer %s too long", stem);
	}
	qsort(p->layer, (size_t)count, sizeof(p->layer[0]), by_name);
	for (i = 1; i < count; i++)
		if (strcmp(p->layer[i].name, p->layer[i - 1].name) == 0)
			return errf(err, elen, "layer %s given twice", p->layer[i].name);
	/* Every layer the user named, to keep or to leave out, must exist: a typo would silently boot
	 * a different system. What the medium lacks may be saved in the store, which is looked at later. */
	p->layers_unknown[0] = '\0';
	xl = 0;
	for (f = p->layer_filter; *f;) {
		const char *e = strchr(f, ',');
		size_t l = e ? (size_t)(e - f) : strlen(f);
		size_t ex = l > 0 && f[0] == '-';
		bool found = false;

		for (j = 0; j < nstems; j++)
			if (entry_names(f + ex, l - ex, stems[j]))
				found = true;
		if (l > ex && !found) {
			int w = snprintf(p->layers_unknown + xl, sizeof(p->layers_unknown) - xl, "%s%.*s", xl ? "," : "",
					 (int)l, f);

			if (w > 0 && (size_t)w < sizeof(p->layers_unknown) - xl)
				xl += (size_t)w;
		}
		f += l + (e ? 1 : 0);
	}
	if (count == 0)
		return errf(err, elen, "no live/NN-name.squashfs layer on the medium%s",
			    p->layer_filter[0] ? " is left by live.layers=" : "");
	p->nlayers = count;
	p->nsaved = 0;
	return count;
}

static void list_add(char *list, size_t len, const char *item, size_t ilen)
{
	size_t used = strlen(list);
	int w = snprintf(list + used, len - used, "%s%.*s", used ? "," : "", (int)ilen, item);

	if (w < 0 || (size_t)w >= len - used)
		list[used] = '\0';
}

static void note_add(char *note, size_t nlen, const char *stem, const char *why)
{
	size_t used = nlen ? strlen(note) : 0;

	if (nlen > used && snprintf(note + used, nlen - used, "%s%s (%s)", used ? ", " : "", stem, why) < 0)
		note[used] = '\0';
}

int plan_add_saved(struct plan *p, const char *const files[], int n, const char *dir, char *note, size_t nlen)
{
	static char stems[MAX_LAYERS * 4][64];
	char left[VALUE_MAX] = "";
	const char *f;
	bool includes = filter_has_includes(p->layer_filter);
	int i, j, first = p->nlayers, nstems = 0;

	if (nlen)
		note[0] = '\0';
	for (i = 0; i < n; i++) {
		struct layer *l;
		char stem[64];
		bool dup = false;

		if (layer_stem(files[i], stem, sizeof(stem)) != 0)
			continue;
		if (nstems < (int)(sizeof(stems) / sizeof(stems[0])))
			memcpy(stems[nstems++], stem, strlen(stem) + 1);
		if ((includes && !in_filter(p->layer_filter, stem, false)) || in_filter(p->layer_filter, stem, true)) {
			list_add(p->layers_excluded, sizeof(p->layers_excluded), stem, strlen(stem));
			continue;
		}
		for (j = 0; j < p->nlayers; j++)
			dup |= strcmp(p->layer[j].name, stem) == 0;
		if (dup || p->nlayers == MAX_LAYERS) {
			note_add(note, nlen, stem, dup ? "a medium layer has that name" : "no room: " MAX_LAYERS_TEXT " layers");
			continue;
		}
		l = &p->layer[p->nlayers];
		memset(l, 0, sizeof(*l));
		memcpy(l->name, stem, strlen(stem) + 1);
		l->loop = l->hash_loop = l->dm_minor = -1;
		l->saved = true;
		if (snprintf(l->file, sizeof(l->file), "%s/%s", dir, files[i]) >= (int)sizeof(l->file) ||
		    snprintf(l->dir, sizeof(l->dir), "%s/layers/%s", p->run_live, stem) >= (int)sizeof(l->dir)) {
			note_add(note, nlen, stem, "path too long");
			continue;
		}
		p->nlayers++;
	}
	qsort(p->layer + first, (size_t)(p->nlayers - first), sizeof(p->layer[0]), by_name);
	p->nsaved = p->nlayers - first;
	/* live.layers= entries that named none of the medium's layers may name one of these */
	for (f = p->layers_unknown; *f;) {
		const char *e = strchr(f, ',');
		size_t l = e ? (size_t)(e - f) : strlen(f), ex = l > 0 && f[0] == '-';
		bool found = false;

		for (j = 0; j < nstems; j++)
			found |= entry_names(f + ex, l - ex, stems[j]);
		if (!found)
			list_add(left, sizeof(left), f, l);
		f += l + (e ? 1 : 0);
	}
	memcpy(p->layers_unknown, left, strlen(left) + 1);
	return p->nsaved;
}

void plan_drop_saved(struct plan *p)
{
	p->nlayers -= p->nsaved;
	p->nsaved = 0;
}

int plan_check_filter(const struct plan *p, char *err, size_t elen)
{
	size_t l = strcspn(p->layers_unknown, ","), ex = p->layers_unknown[0] == '-';

	if (!p->layers_unknown[0])
		return 0;
	return errf(err, elen, "live.layers= names %.*s, which is not on the medium as live/[NN-]%.*s.squashfs nor "
			       "saved in the store's liveunion-v1/layers/", (int)l, p->layers_unknown, (int)(l - ex),
		    p->layers_unknown + ex);
}

int plan_verify_hash(const char *spec, const char *name, char *hash, size_t hlen, char *err, size_t elen)
{
	const char *p = spec;
	size_t n = strlen(name), i;
	int found = 0;

	if (hlen)
		hash[0] = '\0';
	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l > n && p[n] == ':' && strncmp(p, name, n) == 0) {
			size_t hl = l - n - 1;

			if (found++)
				return errf(err, elen, "live.verify= lists layer %s twice", name);
			if (hl < 32 || hl % 2 || hl + 1 > hlen)
				return errf(err, elen, "live.verify= root hash of layer %s has %zu digits", name, hl);
			for (i = 0; i < hl; i++)
				if (!isxdigit((unsigned char)p[n + 1 + i]))
					return errf(err, elen, "live.verify= root hash of layer %s is not hexadecimal", name);
			memcpy(hash, p + n + 1, hl);
			hash[hl] = '\0';
		}
		p += l + (e ? 1 : 0);
	}
	if (!found)
		return errf(err, elen, "live.verify= has no root hash for layer %s (the boot menu and the medium "
				       "do not belong together, or the layer was added to the medium later)", name);
	return 0;
}

bool plan_toram_fits(const struct plan *p, char *note, size_t nlen)
{
	unsigned long long need = TORAM_RESERVE;
	int i;

	for (i = 0; i < p->nlayers; i++)
		need += p->layer[i].bytes;
	if (need <= p->facts.mem_available) {
		errf(note, nlen, "need %llu MiB, MemAvailable %llu MiB", need >> 20, p->facts.mem_available >> 20);
		return true;
	}
	errf(note, nlen, "not enough RAM: need %llu MiB (layers + %llu MiB reserve), MemAvailable %llu MiB",
	     need >> 20, TORAM_RESERVE >> 20, p->facts.mem_available >> 20);
	return false;
}

struct out {
	char *buf;
	size_t len, used;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->used + 1 >= o->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	o->used += (size_t)n < o->len - o->used ? (size_t)n : o->len - o->used - 1;
}

size_t plan_print(const struct plan *p, char *buf, size_t len)
{
	struct out o = {buf, len, 0};
	int i, n;

	if (len)
		buf[0] = '\0';
	put(&o, "medium=%s\n", p->medium_spec);
	put(&o, "timeout=%u\n", p->timeout);
	if (p->size.percent)
		put(&o, "size=%llu%%\n", p->size.n);
	else
		put(&o, "size=%llu\n", p->size.n);
	put(&o, "toram=%d\npanic=%d\ncheck=%d\ndebug=%d\n", p->toram, p->panic, p->check, p->debug);
	put(&o, "break=%s\n", p->break_step == S_NONE ? "" : step_name(p->break_step));
	put(&o, "init=%s\nlayers.wanted=%s\npersist=%s\nverify=%s\n", p->init, p->layer_filter, p->persist, p->verify);
	put(&o, "mem.total=%llu\nmem.available=%llu\n", p->facts.mem_total, p->facts.mem_available);
	put(&o, "upper.kind=%s\nupper.bytes=%llu\n", p->upper_kind, p->upper_bytes);
	put(&o, "medium.device=%s\nmedium.label=%s\nmedium.uuid=%s\n", p->device, p->id.label, p->id.uuid);
	put(&o, "layers=");
	for (i = 0; i < p->nlayers; i++)
		put(&o, "%s%s", i ? "," : "", p->layer[i].name);
	put(&o, "\nlayers.saved=");
	for (i = 0, n = 0; i < p->nlayers; i++)
		if (p->layer[i].saved)
			put(&o, "%s%s", n++ ? "," : "", p->layer[i].name);
	put(&o, "\nlayers.excluded=%s\n", p->layers_excluded);
	put(&o, "verify.mode=%s\nverify.result=%s\ncheck.result=%s\n",
	    p->verify_mode == VERIFY_ON ? "on" : p->verify_mode == VERIFY_OFF ? "off" : "none", p->verify_result,
	    p->check_result);
	for (i = 0; i < p->nlayers; i++) {
		const struct layer *l = &p->layer[i];

		put(&o, "layer.%s.file=%s\nlayer.%s.dir=%s\nlayer.%s.bytes=%llu\n", l->name, l->file, l->name, l->dir,
		    l->name, l->bytes);
		if (l->loop >= 0)
			put(&o, "layer.%s.loop=/dev/loop%d\n", l->name, l->loop);
		if (l->dm_minor >= 0)
			put(&o, "layer.%s.verity=/dev/dm-%d %s\n", l->name, l->dm_minor, l->root_hash);
		if (l->saved)
			put(&o, "layer.%s.from=store\n", l->name);
	}
	put(&o, "toram.result=%s\n", p->toram_result);
	put(&o, "persist.flags=%s\npersist.paths=%s\npersist.result=%s\n", p->persist_flags, p->persist_paths,
	    p->persist_result);
	put(&o, "steps=");
	for (i = 0; i < S_COUNT; i++)
		put(&o, "%s%s", i ? "," : "", step_name(i));
	put(&o, "\ndone=");
	for (i = 0; i < p->done && i < S_COUNT; i++)
		put(&o, "%s%s", i ? "," : "", step_name(i));
	put(&o, "\n");
	return o.used;
}

enum persist_kind persist_kind(const char *spec)
{
	static const struct {
		const char *prefix;
		enum persist_kind kind;
	} forms[] = {{"LABEL=", PK_LABEL}, {"UUID=", PK_UUID}, {"PARTUUID=", PK_PARTUUID}, {"file:", PK_FILE}};
	size_t i, n;

	if (!spec[0] || strcmp(spec, "auto") == 0)
		return PK_AUTO;
	if (strcmp(spec, "off") == 0)
		return PK_OFF;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		n = strlen(forms[i].prefix);
		if (strncmp(spec, forms[i].prefix, n) == 0)
			return spec[n] ? forms[i].kind : PK_BAD;
	}
	return PK_BAD;
}

/* The API file systems are the live system's own: persisting them would hide it. */
static bool path_allowed(const char *p)
{
	static const char *const no[] = {"/proc", "/sys", "/dev", "/run"};
	size_t i, n;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		n = strlen(no[i]);
		if (strncmp(p, no[i], n) == 0 && (p[n] == '\0' || p[n] == '/'))
			return false;
	}
	return true;
}

int persist_paths_parse(const char *list, char out[][PATH_LEN], int max, char *err, size_t elen)
{
	char one[PATH_LEN];
	size_t len, used;
	const char *s = list, *c;
	int n = 0, i;
	bool bad, dup;

	if (elen)
		err[0] = '\0';
	while (*s) {
		len = strcspn(s, ",\n");
		bad = len == 0 || len >= sizeof(one) || s[0] != '/';
		used = 0;
		/* normalise: no repeated or trailing slashes; "." and ".." components are refused */
		for (c = s; !bad && c < s + len;) {
			size_t cl;

			while (c < s + len && *c == '/')
				c++;
			cl = strcspn(c, "/,\n");
			if (cl == 0)
				break;
			if ((cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.'))
				bad = true;
			one[used++] = '/';
			memcpy(one + used, c, cl);
			used += cl;
			c += cl;
		}
		one[used] = '\0';
		if (!bad && (used == 0 || !path_allowed(one)))
			bad = true;
		for (dup = false, i = 0; !bad && i < n; i++)
			dup |= strcmp(out[i], one) == 0;
		if (bad) {
			size_t el = elen ? strlen(err) : 0;

			if (elen > el)
				snprintf(err + el, elen - el, "%s'%.*s'", el ? ", " : "", (int)(len < 64 ? len : 64), s);
		} else if (!dup && n < max) {
			memcpy(out[n++], one, used + 1);
		} else if (!dup && elen > strlen(err)) {
			size_t el = strlen(err);

			snprintf(err + el, elen - el, "%s'%s' (more than %d paths)", el ? ", " : "", one, max);
		}
		s += len;
		s += *s != '\0';
	}
	return n;
}

int persist_path_key(const char *path, char *out, size_t len)
{
	size_t o = 0;
	const char *s = path[0] == '/' ? path + 1 : path;

	for (; *s; s++) {
		const char *rep = *s == '/' ? "%2F" : *s == '%' ? "%25" : NULL;
		size_t n = rep ? 3 : 1;

		if (o + n >= len)
			return -1;
		memcpy(out + o, rep ? rep : s, n);
		o += n;
	}
	if (o == 0 || o >= len)
		return -1;
	out[o] = '\0';
	return 0;
}

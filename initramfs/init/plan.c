#include "plan.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "liveunion/contract.h"
#include "pathlist.h"
#include "text.h"

const char *plan_step_name(enum step_id s)
{
	return key_table[K_BREAK].choices[s];
}

static void copy(char *dst, size_t len, const char *src)
{
	if (snprintf(dst, len, "%s", src) < 0)
		dst[0] = '\0';
}

/* Valid but absurd values: a tmpfs larger than the RAM (the initramfs has no swap: the machine would run out of
 * memory instead of the upper filling up), one too small to start a system in, no time at all for a USB disk to
 * appear. Each is clamped, and said in p->adjusted. */
/* Append one adjustment to p->adjusted, "; " between them (main says them on the console). */
static void note(struct plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct plan *p, const char *fmt, ...)
{
	size_t used = strlen(p->adjusted);
	va_list ap;

	if (used && used + 2 < sizeof(p->adjusted)) {
		memcpy(p->adjusted + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	if (vsnprintf(p->adjusted + used, sizeof(p->adjusted) - used, fmt, ap) < 0)
		p->adjusted[used] = '\0';
	va_end(ap);
}

static void clamp(struct plan *p, unsigned long long mem_total)
{
	p->adjusted[0] = '\0';
	if (mem_total && p->upper_bytes > mem_total) {
		note(p,
		     "live.size= asks for %llu bytes, more than the RAM (%llu MiB): the RAM's size (as live.size=100%%) "
		     "used",
		     p->upper_bytes, mem_total >> 20);
		p->upper_bytes = mem_total;
	}
	if (p->upper_bytes < UPPER_MIN && (mem_total || !p->size.percent)) { /* 0: no RAM figure, no limit */
		note(p, "live.size= asks for %llu bytes, less than a live system starts in: %llu MiB used",
		     p->upper_bytes, UPPER_MIN >> 20);
		p->upper_bytes = UPPER_MIN;
	}
	if (p->timeout < TIMEOUT_MIN) {
		note(p, "live.timeout=%u leaves no time for a USB disk to appear: %d s used", p->timeout, TIMEOUT_MIN);
		p->timeout = TIMEOUT_MIN;
	}
}

/* Network boot: live.fetch= or live.nbd= (fetch wins when both are given, said), ip= and BOOTIF= checked here,
 * once; a bad ip= falls back to DHCP on any interface, said. A netbooted client keeps its changes in RAM unless
 * live.persist= names a store; live.toram has nothing left to do. */
static void plan_net(const struct cmdline *c, struct plan *p)
{
	const char *fetch = c->v[K_FETCH].s, *nbd = c->v[K_NBD].s;
	char err[160];

	if (fetch[0] && nbd[0])
		note(p, "both live.fetch= and live.nbd= given: live.fetch= used");
	p->net = fetch[0] ? NET_FETCH : nbd[0] ? NET_NBD : NET_NONE;
	if (p->net == NET_FETCH) {
		p->nfetch = fetch_urls(fetch, p->fetch, FETCH_URL_MAX, p->net_bad, sizeof(p->net_bad));
		if (p->nfetch < 0)
			p->nfetch = 0;
	} else if (p->net == NET_NBD && nbd_spec_parse(nbd, &p->nbd, p->net_bad, sizeof(p->net_bad)) != 0) {
		memset(&p->nbd, 0, sizeof(p->nbd));
	}
	if (net_parse_ip(c->ip, &p->ip, err, sizeof(err)) != 0) {
		note(p, "%s: DHCP on any interface used", err);
		if (net_parse_ip("", &p->ip, err, sizeof(err)) != 0)
			p->ip.dhcp = true;
	}
	if (c->bootif[0] && net_parse_bootif(c->bootif, p->bootif_mac) != 0) {
		note(p, "BOOTIF=%s is not 01-xx-xx-xx-xx-xx-xx: ignored", c->bootif);
		p->bootif_mac[0] = '\0';
	}
	if (p->net == NET_NONE)
		return;
	if (p->persist_kind == PK_AUTO && !p->iso_path[0]) {
		p->persist_kind = PK_OFF;
		copy(p->persist, sizeof(p->persist), "off");
	}
	if (p->net == NET_FETCH && p->toram) {
		note(p, "live.toram with live.fetch=: the layers are downloaded into RAM anyway");
		p->toram = false;
	}
	/* Nothing downloaded is booted unread: the layers are read in full through dm-verity at mount, so an altered
	 * file stops the boot naming its layer instead of failing later inside the running system. */
	if (p->net == NET_FETCH)
		p->check = p->verify_mode == VERIFY_ON;
}

/* live.layers=: entries NAME or -NAME; an empty one, or a lone "-", names nothing. */
static void plan_layers(const char *list, struct plan *p)
{
	const char *s = list, *e;
	size_t l;

	copy(p->layers_wanted, sizeof(p->layers_wanted), list);
	while (text_item(&s, ",", &e, &l)) {
		struct layer_pick *k = &p->pick[p->npicks];
		size_t ex = l > 0 && e[0] == '-';

		if (l <= ex)
			continue;
		if (p->npicks == MAX_PICKS) {
			note(p, "live.layers= has more than %d entries: the rest ignored", MAX_PICKS);
			return;
		}
		k->exclude = ex;
		k->too_long = l - ex >= sizeof(k->name);
		text_fmt(k->name, sizeof(k->name), "%.*s", (int)(l - ex), e + ex);
		p->npicks++;
	}
}

/* live.verify=: NAME:HEX entries, kept as written; plan_root_hash judges the one a layer needs, and the layers step
 * requires every named layer that live.layers= keeps (layers.c). Off or empty: no entries. */
static void plan_verify(const char *spec, struct plan *p)
{
	const char *s = spec, *e, *colon;
	size_t l, n, i;

	p->verify_mode = !spec[0] ? VERIFY_NONE : strcmp(spec, "off") == 0 ? VERIFY_OFF : VERIFY_ON;
	if (p->verify_mode != VERIFY_ON)
		return;
	while (text_item(&s, ",", &e, &l)) {
		struct verify_entry *v = &p->verify[p->nverify];

		colon = memchr(e, ':', l);
		n = colon ? (size_t)(colon - e) : 0;
		if (!colon || n >= sizeof(v->name)) /* names no layer: layer names are shorter */
			continue;
		if (p->nverify == MAX_VERIFY) {
			note(p, "live.verify= has more than %d entries: the rest ignored", MAX_VERIFY);
			return;
		}
		memcpy(v->name, e, n);
		v->name[n] = '\0';
		v->digits = l - n - 1;
		v->hex = true;
		for (i = 0; i < v->digits; i++)
			v->hex &= isxdigit((unsigned char)colon[1 + i]) != 0;
		text_fmt(v->hash, sizeof(v->hash), "%.*s", (int)(v->digits < ROOT_HASH_LEN ? v->digits : ROOT_HASH_LEN),
			 colon + 1);
		p->nverify++;
	}
}

/* live.persist.paths: parsed here; what it refused is said when the store is mounted (paths_select). */
static void plan_paths(const char *list, struct plan *p)
{
	p->persist_paths_given = list[0] != '\0';
	if (p->persist_paths_given)
		p->npersist_paths = paths_parse(list, p->persist_paths, MAX_PATHS, p->persist_paths_bad,
						sizeof(p->persist_paths_bad));
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
	copy(p->persist, sizeof(p->persist), c->v[K_PERSIST].s);
	p->persist_kind = plan_persist_kind(p->persist);
	if (p->persist_kind == PK_LABEL || p->persist_kind == PK_UUID || p->persist_kind == PK_PARTUUID ||
	    p->persist_kind == PK_FILE)
		copy(p->persist_arg, sizeof(p->persist_arg), strpbrk(p->persist, "=:") + 1);
	p->persist_ro = c->v[K_PERSISTRO].flag;
	p->persist_reset = c->v[K_PERSISTRESET].flag;
	p->persist_timeout = (unsigned)c->v[K_PERSISTTIMEOUT].u;
	copy(p->run_live, sizeof(p->run_live), run_live);
	copy(p->newroot, sizeof(p->newroot), newroot);
	p->facts = *f;
	p->upper_bytes = cmdline_size_resolve(&p->size, f->mem_total);
	clamp(p, f->mem_total);
	plan_layers(c->v[K_LAYERS].s, p);
	plan_verify(c->v[K_VERIFY].s, p);
	plan_paths(c->v[K_PERSISTPATHS].s, p);
	/* GRUB's iso_path is absolute; a relative one is read from the partition's top */
	if (c->v[K_ISO].s[0]) {
		int n = snprintf(p->iso_path, sizeof(p->iso_path), "%s%s", c->v[K_ISO].s[0] == '/' ? "" : "/",
				 c->v[K_ISO].s);

		if (n < 0 || (size_t)n >= sizeof(p->iso_path)) {
			p->iso_path[0] = '\0';
			note(p, "live.iso= is %zu bytes, longer than a path here may be (%d): ignored",
			     strlen(c->v[K_ISO].s), PATH_LEN - 1);
		}
	}
	plan_net(c, p);
}

void plan_boot_init(const struct plan *p, struct boot *b)
{
	memset(b, 0, sizeof(*b));
	b->upper_bytes = p->upper_bytes;
	copy(b->upper_kind, sizeof(b->upper_kind), "tmpfs");
	copy(b->medium_fstype, sizeof(b->medium_fstype), "iso9660");
	b->store.loopfd = -1;
}

int plan_root_hash(const struct plan *p, const char *name, char *hash, size_t hlen, char *err, size_t elen)
{
	int found = 0, i;

	if (hlen)
		hash[0] = '\0';
	for (i = 0; i < p->nverify; i++) {
		const struct verify_entry *v = &p->verify[i];

		if (strcmp(v->name, name) != 0)
			continue;
		if (found++)
			return text_err(err, elen, "live.verify= lists layer %s twice", name);
		if (v->digits < 32 || v->digits % 2 || v->digits + 1 > hlen || v->digits > ROOT_HASH_LEN)
			return text_err(err, elen, "live.verify= root hash of layer %s has %zu digits", name,
					v->digits);
		if (!v->hex)
			return text_err(err, elen, "live.verify= root hash of layer %s is not hexadecimal", name);
		memcpy(hash, v->hash, v->digits + 1);
	}
	if (!found)
		return text_err(err, elen,
				"live.verify= has no root hash for layer %s (the boot menu and the medium "
				"do not belong together, or the layer was added to the medium later)",
				name);
	return 0;
}

bool plan_toram_fits(const struct plan *p, const struct boot *b, char *note, size_t nlen)
{
	unsigned long long need = RAM_RESERVE;
	int i;

	for (i = 0; i < b->nlayers; i++)
		need += b->layer[i].bytes;
	if (need <= p->facts.mem_available) {
		text_err(note, nlen, "need %llu MiB, MemAvailable %llu MiB", need >> 20, p->facts.mem_available >> 20);
		return true;
	}
	text_err(note, nlen, "not enough RAM: need %llu MiB (layers + %llu MiB reserve), MemAvailable %llu MiB",
		 need >> 20, RAM_RESERVE >> 20, p->facts.mem_available >> 20);
	return false;
}

enum persist_kind plan_persist_kind(const char *spec)
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

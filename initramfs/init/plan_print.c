/* The plan and the boot state as key=value lines: the console's "plan:" and run_live/plan, which the live system and
 * the `liveunion` command read (the keys other programs read are contract.h's PLAN_*). */
#include "plan.h"

#include <stdarg.h>
#include <stdio.h>

#include "liveunion/contract.h"

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

/* layers=, layers.saved=, layers.excluded=, verify.*, then layer.NAME.* for each layer, bottom first. */
static void print_layers(struct out *o, const struct plan *p, const struct boot *b)
{
	int i, n;

	put(o, "layers=");
	for (i = 0; i < b->nlayers; i++)
		put(o, "%s%s", i ? "," : "", b->layer[i].name);
	put(o, "\nlayers.saved=");
	for (i = 0, n = 0; i < b->nlayers; i++)
		if (b->layer[i].saved)
			put(o, "%s%s", n++ ? "," : "", b->layer[i].name);
	put(o, "\n" PLAN_LAYERS_EXCLUDED "=%s\n", b->layers_excluded);
	put(o, "verify.mode=%s\n", p->verify_mode == VERIFY_ON ? "on" : p->verify_mode == VERIFY_OFF ? "off" : "none");
	/* the root hashes the command line gives, as given; which layer each guards is said per layer below */
	for (i = 0; i < p->nverify; i++)
		put(o, "verify.root_hash.%s=%s\n", p->verify[i].name, p->verify[i].hash);
	put(o, "verify.result=%s\ncheck.result=%s\n", b->verify_result, b->check_result);
	/* What dm-verity vouches for, and what the system also reads that it does not: the store's saved layers and
	 * the writable upper are changed by the running system, so no root hash can cover them (docs/boot.md). */
	put(o, "verify.covers=");
	for (i = 0, n = 0; i < b->nlayers && p->verify_mode == VERIFY_ON; i++)
		if (b->layer[i].root_hash[0] && (!b->layer[i].saved || b->layer[i].sig))
			put(o, "%s%s", n++ ? "," : "", b->layer[i].name);
	put(o, "\nverify.outside=");
	for (i = 0, n = 0; i < b->nlayers; i++)
		if (p->verify_mode != VERIFY_ON ||
		    (b->layer[i].saved && !(b->layer[i].sig && b->layer[i].root_hash[0])))
			put(o, "%s%s%s", n++ ? "," : "", b->layer[i].saved ? "saved:" : "", b->layer[i].name);
	put(o, "%supper:%s\n", n ? "," : "", b->upper_kind[0] ? b->upper_kind : "none");
	for (i = 0; i < b->nlayers; i++) {
		const struct layer *l = &b->layer[i];

		put(o, "layer.%s.file=%s\nlayer.%s.dir=%s\nlayer.%s.bytes=%llu\n", l->name, l->file, l->name, l->dir,
		    l->name, l->bytes);
		if (l->root_hash[0])
			put(o, "layer.%s.root_hash=%s\n", l->name, l->root_hash);
		else if (p->verify_mode == VERIFY_ON && l->sig)
			put(o,
			    "layer.%s.root_hash=signed: read from its " LAYER_ROOTHASH_SUFFIX
			    " when set up, refused unless the kernel accepts its " LAYER_SIG_SUFFIX "\n",
			    l->name);
		else if (p->verify_mode == VERIFY_ON && !l->saved)
			put(o, "layer.%s.root_hash=none: %s\n", l->name, l->no_hash);
		if (l->sig)
			put(o, "layer.%s.signed=1\n", l->name);
		if (l->loop >= 0)
			put(o, "layer.%s.loop=/dev/loop%d\n", l->name, l->loop);
		if (l->dm_minor >= 0)
			put(o, "layer.%s.verity=/dev/dm-%d %s\n", l->name, l->dm_minor, l->root_hash);
		if (l->saved)
			put(o, "layer.%s.from=store\n", l->name);
	}
}

size_t plan_print(const struct plan *p, const struct boot *b, char *buf, size_t len)
{
	struct out o = {buf, len, 0};
	int i;

	if (len)
		buf[0] = '\0';
	put(&o, "medium=%s\n", p->medium_spec);
	put(&o, "timeout=%u\n", p->timeout);
	if (p->size.percent)
		put(&o, "size=%llu%%\n", p->size.n);
	else
		put(&o, "size=%llu\n", p->size.n);
	put(&o, "toram=%d\npanic=%d\ncheck=%d\ndebug=%d\n", p->toram, p->panic, p->check, p->debug);
	put(&o, "break=%s\n", p->break_step == S_NONE ? "" : plan_step_name(p->break_step));
	put(&o, "init=%s\nlayers.wanted=%s\npersist=%s\n", p->init, p->layers_wanted, p->persist);
	put(&o, "mem.total=%llu\nmem.available=%llu\n", p->facts.mem_total, p->facts.mem_available);
	put(&o, "upper.kind=%s\nupper.bytes=%llu\n", b->upper_kind, b->upper_bytes);
	put(&o, "medium.device=%s\nmedium.label=%s\nmedium.uuid=%s\n", b->device, b->id.label, b->id.uuid);
	if (p->net == NET_FETCH) {
		put(&o, "medium.fetch=");
		for (i = 0; i < p->nfetch; i++)
			put(&o, "%s%s", i ? "," : "", p->fetch[i]);
		put(&o, "\nnet=%s\n", b->net_result);
	} else if (p->net == NET_NBD) {
		put(&o, "medium.nbd=%s%s%s%s%s\nnet=%s\n", p->nbd.host, p->nbd.host[0] ? ":" : "", p->nbd.port,
		    p->nbd.host[0] ? "/" : "", p->nbd.export, b->net_result);
	}
	if (p->iso_path[0])
		put(&o, "medium.iso=%s\nmedium.iso.host=%s\nmedium.iso.fstype=%s\n", p->iso_path, b->iso_host,
		    b->iso_fstype);
	print_layers(&o, p, b);
	put(&o, "toram.result=%s\n", b->toram_result);
	put(&o, "persist.flags=%s%s%s\npersist.paths=", p->persist_ro ? "ro" : "",
	    p->persist_ro && p->persist_reset ? "," : "", p->persist_reset ? "reset" : "");
	for (i = 0; i < (b->npaths ? b->npaths : p->npersist_paths); i++)
		put(&o, "%s%s", i ? "," : "", b->npaths ? b->paths[i] : p->persist_paths[i]);
	put(&o, "\npersist.result=%s\n", b->persist_result);
	put(&o, "kernel=%s\nkernel.overlay=%s\n", b->kernel, b->kernel_overlay);
	put(&o, "steps=");
	for (i = 0; i < S_COUNT; i++)
		put(&o, "%s%s", i ? "," : "", plan_step_name(i));
	put(&o, "\ndone=");
	for (i = 0; i < b->done && i < S_COUNT; i++)
		put(&o, "%s%s", i ? "," : "", plan_step_name(i));
	put(&o, "\n");
	return o.used;
}

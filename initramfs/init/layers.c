/* Choosing the layers: the medium's live/NN-name.squashfs and the store's saved ones, live.layers= applied. */
#include "layers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liveunion/contract.h"
#include "text.h"

/* NN-name.squashfs with a name that is safe in an overlay lowerdir list (no ':' ',' '\\'). */
static int layer_stem(const char *file, char *stem, size_t len)
{
	size_t n = strlen(file);
	const size_t ext = sizeof(LAYER_SUFFIX) - 1;

	if (n <= ext || strcmp(file + n - ext, LAYER_SUFFIX) != 0)
		return -1;
	n -= ext;
	if (!layer_stem_ok(file, n) || n >= len)
		return -1;
	memcpy(stem, file, n);
	stem[n] = '\0';
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct layer *)a)->name, ((const struct layer *)b)->name);
}

/* A live.layers= entry names a layer by its whole stem (20-desktop) or without the number (desktop). An entry with
 * a number of its own names that stem only: 20-kiosk must not also let in a 11-20-kiosk or 99-20-kiosk that
 * whoever writes the medium or the store put beside it. */
static bool pick_names(const struct layer_pick *k, const char *stem)
{
	if (k->too_long)
		return false;
	if (layer_nn(k->name) >= 0)
		return strcmp(k->name, stem) == 0;
	return layer_nn(stem) >= 0 && strcmp(k->name, stem + 3) == 0;
}

/* Whether live.layers= leaves stem out: it has includes and none names stem, or an exclude (-name) names it. */
static bool filtered_out(const struct plan *p, const char *stem)
{
	bool includes = false, included = false;
	int i;

	for (i = 0; i < p->npicks; i++) {
		const struct layer_pick *k = &p->pick[i];

		includes |= !k->exclude;
		if (pick_names(k, stem)) {
			if (k->exclude)
				return true;
			included = true;
		}
	}
	return includes && !included;
}

/* The live.layers= entries still unknown that name none of stems stay unknown. */
static void mark_unknown(const struct plan *p, struct boot *b, char stems[][64], int nstems)
{
	int i, j;

	for (i = 0; i < p->npicks; i++)
		for (j = 0; j < nstems && b->pick_unknown[i]; j++)
			b->pick_unknown[i] = !pick_names(&p->pick[i], stems[j]);
}

#define MAX_STEMS (MAX_LAYERS * 4)

/* Whether file is a layer (its stem kept in stems for the name check) that live.layers= keeps; a layer it
 * leaves out is listed in layers_excluded. */
static bool wanted(const struct plan *p, struct boot *b, const char *file, char stem[64], char stems[][64], int *nstems)
{
	if (layer_stem(file, stem, 64) != 0)
		return false;
	if (*nstems < MAX_STEMS)
		memcpy(stems[(*nstems)++], stem, strlen(stem) + 1);
	if (!filtered_out(p, stem))
		return true;
	text_list_add(b->layers_excluded, sizeof(b->layers_excluded), stem, strlen(stem));
	return false;
}

static void layer_init(struct layer *l, const char *stem)
{
	memset(l, 0, sizeof(*l));
	memcpy(l->name, stem, strlen(stem) + 1);
	l->loop = l->hash_loop = l->dm_minor = -1;
}

/* Whether files has stem followed by suffix. */
static bool has_file(const char *const files[], int n, const char *stem, const char *suffix)
{
	size_t sl = strlen(stem);
	int i;

	for (i = 0; i < n; i++)
		if (strncmp(files[i], stem, sl) == 0 && strcmp(files[i] + sl, suffix) == 0)
			return true;
	return false;
}

/* Whether live.verify= has an entry for name, good or bad: a bad one is never replaced by a signature. */
static bool verify_lists(const struct plan *p, const char *name)
{
	int i;

	for (i = 0; i < p->nverify; i++)
		if (strcmp(p->verify[i].name, name) == 0)
			return true;
	return false;
}

/* A layer that live.verify= does not name is verified when its root hash is signed: NN-name.roothash and
 * NN-name.roothash.p7s beside it (the kernel checks the signature when the layer is set up, verity_layer). Without
 * them no_hash says both ways it could have been trusted. */
static void layer_sig(const struct plan *p, struct layer *l, const char *const files[], int n)
{
	bool hash = has_file(files, n, l->name, LAYER_ROOTHASH_SUFFIX),
	     sig = has_file(files, n, l->name, LAYER_SIG_SUFFIX);

	if (verify_lists(p, l->name))
		return;
	if (hash && sig) {
		l->sig = true;
		return;
	}
	text_fmt(l->no_hash, sizeof(l->no_hash),
		 "live.verify= has no root hash for layer %s and it is not signed (%s): refused while verification is "
		 "on (the boot menu and the medium do not belong together, or the layer was added later unsigned)",
		 l->name,
		 !hash && !sig ? "no " LAYER_ROOTHASH_SUFFIX " and " LAYER_SIG_SUFFIX " beside it" :
		 !sig          ? "no " LAYER_SIG_SUFFIX " beside it" :
				 "a " LAYER_SIG_SUFFIX " but no " LAYER_ROOTHASH_SUFFIX " beside it");
}

/* live.verify= names the verified set: each layer it has a root hash for must be stacked, unless live.layers= (on
 * the same signed command line) leaves it out. Attaching hashes only to the layers found would let whoever can
 * write the medium drop one (a lock-down layer, a policy) and still boot "verified". Saved layers from the store
 * never stand in for one: they are outside the verified set and come later. */
static int verified_set_complete(const struct plan *p, const struct boot *b, int count, char stems[][64], int nstems,
				 char *err, size_t elen)
{
	char found[300];
	int i, j;

	for (i = 0; i < p->nverify; i++) {
		const char *name = p->verify[i].name;
		bool there = false;

		if (filtered_out(p, name))
			continue;
		for (j = 0; j < count && !there; j++)
			there = strcmp(b->layer[j].name, name) == 0;
		if (there)
			continue;
		found[0] = '\0';
		for (j = 0; j < nstems; j++)
			text_list_add(found, sizeof(found), stems[j], strlen(stems[j]));
		return text_err(
			err, elen,
			"live.verify= has a root hash for layer %s, which is not on the medium as live/%s.squashfs "
			"(found: %s); a verified boot needs every layer it names, or live.layers= leaving it out",
			name, name, found[0] ? found : "no layer");
	}
	return 0;
}

int layers_choose(const struct plan *p, struct boot *b, const char *const files[], int n, char *err, size_t elen)
{
	static char stems[MAX_STEMS][64];
	int i, count = 0, nstems = 0;

	b->layers_excluded[0] = '\0';
	for (i = 0; i < n; i++) {
		struct layer *l;
		char stem[64];

		if (!wanted(p, b, files[i], stem, stems, &nstems))
			continue;
		if (count == MAX_LAYERS)
			return text_err(err, elen, "more than %d layers", MAX_LAYERS);
		l = &b->layer[count++];
		layer_init(l, stem);
		if (snprintf(l->file, sizeof(l->file), "%s/" LIVE_MEDIUM "/live/%s", p->run_live, files[i]) >=
			    (int)sizeof(l->file) ||
		    snprintf(l->hash_file, sizeof(l->hash_file), "%s/" LIVE_MEDIUM "/live/%s" LAYER_VERITY_SUFFIX,
			     p->run_live, stem) >= (int)sizeof(l->hash_file) ||
		    snprintf(l->dir, sizeof(l->dir), "%s/" LIVE_LAYERS "/%s", p->run_live, stem) >= (int)sizeof(l->dir))
			return text_err(err, elen, "path of layer %s too long", stem);
	}
	qsort(b->layer, (size_t)count, sizeof(b->layer[0]), by_name);
	for (i = 1; i < count; i++)
		if (strcmp(b->layer[i].name, b->layer[i - 1].name) == 0)
			return text_err(err, elen, "layer %s given twice", b->layer[i].name);
	/* Each layer's root hash from the plan, attached now: the printed plan says which hash guards which layer.
	 * One the plan lacks stops the boot when that layer is mounted (verity_layer), saying why. */
	for (i = 0; i < count && p->verify_mode == VERIFY_ON; i++) {
		struct layer *l = &b->layer[i];

		if (plan_root_hash(p, l->name, l->root_hash, sizeof(l->root_hash), l->no_hash, sizeof(l->no_hash)) !=
		    0) {
			l->root_hash[0] = '\0';
			layer_sig(p, l, files, n);
		}
	}
	if (p->verify_mode == VERIFY_ON && verified_set_complete(p, b, count, stems, nstems, err, elen) != 0)
		return -1;
	/* Every layer the user named, to keep or to leave out, must exist: a typo would silently boot
	 * a different system. What the medium lacks may be saved in the store, which is looked at later. */
	for (i = 0; i < p->npicks; i++)
		b->pick_unknown[i] = true;
	mark_unknown(p, b, stems, nstems);
	/* A layer live.verify= names is known to the command line even when the medium lacks it: leaving it out with
	 * live.layers=-NAME is how a signed line boots without it. */
	for (i = 0; i < p->npicks; i++)
		for (int j = 0; j < p->nverify && b->pick_unknown[i]; j++)
			b->pick_unknown[i] = !pick_names(&p->pick[i], p->verify[j].name);
	if (count == 0)
		return text_err(err, elen, "no live/NN-name.squashfs layer on the medium%s",
				p->npicks ? " is left by live.layers=" : "");
	b->nlayers = count;
	b->nsaved = 0;
	return count;
}

static void note_add(char *note, size_t nlen, const char *stem, const char *why)
{
	size_t used = nlen ? strlen(note) : 0;

	if (nlen > used && snprintf(note + used, nlen - used, "%s%s (%s)", used ? ", " : "", stem, why) < 0)
		note[used] = '\0';
}

int layers_add_saved(const struct plan *p, struct boot *b, const char *const files[], int n, const char *dir,
		     char *note, size_t nlen)
{
	static char stems[MAX_STEMS][64];
	int i, j, first = b->nlayers, nstems = 0;

	if (nlen)
		note[0] = '\0';
	for (i = 0; i < n; i++) {
		struct layer *l;
		char stem[64];
		bool dup = false;

		if (!wanted(p, b, files[i], stem, stems, &nstems))
			continue;
		for (j = 0; j < b->nlayers; j++)
			dup |= strcmp(b->layer[j].name, stem) == 0;
		if (dup || b->nlayers == MAX_LAYERS) {
			note_add(note, nlen, stem,
				 dup ? "a medium layer has that name" : "no room: " MAX_LAYERS_TEXT " layers");
			continue;
		}
		l = &b->layer[b->nlayers];
		layer_init(l, stem);
		l->saved = true;
		if (snprintf(l->file, sizeof(l->file), "%s/%s", dir, files[i]) >= (int)sizeof(l->file) ||
		    snprintf(l->dir, sizeof(l->dir), "%s/" LIVE_LAYERS "/%s", p->run_live, stem) >=
			    (int)sizeof(l->dir)) {
			note_add(note, nlen, stem, "path too long");
			continue;
		}
		/* A signed layer in the store is verified like the medium's (a hash_file marks it for stack_mount_layer),
		 * and refused when its signature does not hold; an unsigned one stays the user's own, as before. */
		if (p->verify_mode == VERIFY_ON && has_file(files, n, stem, LAYER_SIG_SUFFIX)) {
			layer_sig(p, l, files, n);
			if (snprintf(l->hash_file, sizeof(l->hash_file), "%s/%s" LAYER_VERITY_SUFFIX, dir, stem) >=
			    (int)sizeof(l->hash_file)) {
				note_add(note, nlen, stem, "path too long");
				continue;
			}
		}
		b->nlayers++;
	}
	qsort(b->layer + first, (size_t)(b->nlayers - first), sizeof(b->layer[0]), by_name);
	b->nsaved = b->nlayers - first;
	/* live.layers= entries that named none of the medium's layers may name one of these */
	mark_unknown(p, b, stems, nstems);
	return b->nsaved;
}

void layers_drop_saved(struct boot *b)
{
	b->nlayers -= b->nsaved;
	b->nsaved = 0;
}

int layers_check_filter(const struct plan *p, const struct boot *b, char *err, size_t elen)
{
	int i;

	for (i = 0; i < p->npicks && !b->pick_unknown[i]; i++)
		;
	if (i == p->npicks)
		return 0;
	return text_err(err, elen,
			"live.layers= names %s%s, which is not on the medium as live/[NN-]%s.squashfs nor "
			"saved in the store's " STORE_VDIR "/" STORE_LAYERS "/",
			p->pick[i].exclude ? "-" : "", p->pick[i].name, p->pick[i].name);
}

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

/* A live.layers= entry names a layer by its whole stem (20-desktop) or without the number (desktop). */
static bool entry_names(const char *entry, size_t len, const char *stem)
{
	size_t n = strlen(stem);

	return (len == n && strncmp(entry, stem, n) == 0) || (len == n - 3 && strncmp(entry, stem + 3, len) == 0);
}

/* Whether the filter leaves stem out: it has includes and none names stem, or an exclude (-name) names it. */
static bool filtered_out(const char *filter, const char *stem)
{
	const char *f = filter, *e;
	size_t l;
	bool includes = false, included = false;

	while (text_item(&f, ",", &e, &l)) {
		bool ex = l > 0 && e[0] == '-';

		if (l > 0 && !ex)
			includes = true;
		if (l > 0 && entry_names(e + ex, l - ex, stem)) {
			if (ex)
				return true;
			included = true;
		}
	}
	return includes && !included;
}

/* The entries of list (live.layers= entries, "-name" too) that name none of stems, as a list into left. */
static void unknown_entries(const char *list, char stems[][64], int nstems, char *left, size_t llen)
{
	const char *f = list, *e;
	size_t l;
	int j;

	left[0] = '\0';
	while (text_item(&f, ",", &e, &l)) {
		size_t ex = l > 0 && e[0] == '-';
		bool found = false;

		for (j = 0; j < nstems && !found; j++)
			found = entry_names(e + ex, l - ex, stems[j]);
		if (l > ex && !found)
			text_list_add(left, llen, e, l);
	}
}

#define MAX_STEMS (MAX_LAYERS * 4)

/* Whether file is a layer (its stem kept in stems for the name check) that live.layers= keeps; a layer it
 * leaves out is listed in layers_excluded. */
static bool wanted(struct plan *p, const char *file, char stem[64], char stems[][64], int *nstems)
{
	if (layer_stem(file, stem, 64) != 0)
		return false;
	if (*nstems < MAX_STEMS)
		memcpy(stems[(*nstems)++], stem, strlen(stem) + 1);
	if (!filtered_out(p->layer_filter, stem))
		return true;
	text_list_add(p->layers_excluded, sizeof(p->layers_excluded), stem, strlen(stem));
	return false;
}

static void layer_init(struct layer *l, const char *stem)
{
	memset(l, 0, sizeof(*l));
	memcpy(l->name, stem, strlen(stem) + 1);
	l->loop = l->hash_loop = l->dm_minor = -1;
}

int layers_choose(struct plan *p, const char *const files[], int n, char *err, size_t elen)
{
	static char stems[MAX_STEMS][64];
	int i, count = 0, nstems = 0;

	p->layers_excluded[0] = '\0';
	for (i = 0; i < n; i++) {
		struct layer *l;
		char stem[64];

		if (!wanted(p, files[i], stem, stems, &nstems))
			continue;
		if (count == MAX_LAYERS)
			return text_err(err, elen, "more than %d layers", MAX_LAYERS);
		l = &p->layer[count++];
		layer_init(l, stem);
		if (snprintf(l->file, sizeof(l->file), "%s/" LIVE_MEDIUM "/live/%s", p->run_live, files[i]) >=
			    (int)sizeof(l->file) ||
		    snprintf(l->hash_file, sizeof(l->hash_file), "%s/" LIVE_MEDIUM "/live/%s" LAYER_VERITY_SUFFIX,
			     p->run_live, stem) >= (int)sizeof(l->hash_file) ||
		    snprintf(l->dir, sizeof(l->dir), "%s/" LIVE_LAYERS "/%s", p->run_live, stem) >= (int)sizeof(l->dir))
			return text_err(err, elen, "path of layer %s too long", stem);
	}
	qsort(p->layer, (size_t)count, sizeof(p->layer[0]), by_name);
	for (i = 1; i < count; i++)
		if (strcmp(p->layer[i].name, p->layer[i - 1].name) == 0)
			return text_err(err, elen, "layer %s given twice", p->layer[i].name);
	/* Every layer the user named, to keep or to leave out, must exist: a typo would silently boot
	 * a different system. What the medium lacks may be saved in the store, which is looked at later. */
	unknown_entries(p->layer_filter, stems, nstems, p->layers_unknown, sizeof(p->layers_unknown));
	if (count == 0)
		return text_err(err, elen, "no live/NN-name.squashfs layer on the medium%s",
				p->layer_filter[0] ? " is left by live.layers=" : "");
	p->nlayers = count;
	p->nsaved = 0;
	return count;
}

static void note_add(char *note, size_t nlen, const char *stem, const char *why)
{
	size_t used = nlen ? strlen(note) : 0;

	if (nlen > used && snprintf(note + used, nlen - used, "%s%s (%s)", used ? ", " : "", stem, why) < 0)
		note[used] = '\0';
}

int layers_add_saved(struct plan *p, const char *const files[], int n, const char *dir, char *note, size_t nlen)
{
	static char stems[MAX_STEMS][64];
	char left[VALUE_MAX];
	int i, j, first = p->nlayers, nstems = 0;

	if (nlen)
		note[0] = '\0';
	for (i = 0; i < n; i++) {
		struct layer *l;
		char stem[64];
		bool dup = false;

		if (!wanted(p, files[i], stem, stems, &nstems))
			continue;
		for (j = 0; j < p->nlayers; j++)
			dup |= strcmp(p->layer[j].name, stem) == 0;
		if (dup || p->nlayers == MAX_LAYERS) {
			note_add(note, nlen, stem,
				 dup ? "a medium layer has that name" : "no room: " MAX_LAYERS_TEXT " layers");
			continue;
		}
		l = &p->layer[p->nlayers];
		layer_init(l, stem);
		l->saved = true;
		if (snprintf(l->file, sizeof(l->file), "%s/%s", dir, files[i]) >= (int)sizeof(l->file) ||
		    snprintf(l->dir, sizeof(l->dir), "%s/" LIVE_LAYERS "/%s", p->run_live, stem) >=
			    (int)sizeof(l->dir)) {
			note_add(note, nlen, stem, "path too long");
			continue;
		}
		p->nlayers++;
	}
	qsort(p->layer + first, (size_t)(p->nlayers - first), sizeof(p->layer[0]), by_name);
	p->nsaved = p->nlayers - first;
	/* live.layers= entries that named none of the medium's layers may name one of these */
	unknown_entries(p->layers_unknown, stems, nstems, left, sizeof(left));
	memcpy(p->layers_unknown, left, strlen(left) + 1);
	return p->nsaved;
}

void layers_drop_saved(struct plan *p)
{
	p->nlayers -= p->nsaved;
	p->nsaved = 0;
}

int layers_check_filter(const struct plan *p, char *err, size_t elen)
{
	size_t l = strcspn(p->layers_unknown, ","), ex = p->layers_unknown[0] == '-';

	if (!p->layers_unknown[0])
		return 0;
	return text_err(err, elen,
			"live.layers= names %.*s, which is not on the medium as live/[NN-]%.*s.squashfs nor "
			"saved in the store's " STORE_VDIR "/" STORE_LAYERS "/",
			(int)l, p->layers_unknown, (int)(l - ex), p->layers_unknown + ex);
}

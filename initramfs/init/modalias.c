#include "modalias.h"

#include "cmdline.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mod_name_of(const char *path, char *name, size_t len)
{
	const char *b = strrchr(path, '/'), *e;
	size_t n, i;

	b = b ? b + 1 : path;
	e = strstr(b, ".ko");
	n = e ? (size_t)(e - b) : strlen(b);
	if (n == 0 || n >= len)
		return -1;
	for (i = 0; i < n; i++)
		name[i] = b[i] == '-' ? '_' : b[i];
	name[n] = '\0';
	return 0;
}

int mod_compressed(const char *path)
{
	size_t n = strlen(path);

	return (n > 6 && strcmp(path + n - 6, ".ko.xz") == 0) || (n > 7 && strcmp(path + n - 7, ".ko.zst") == 0) ||
	       (n > 6 && strcmp(path + n - 6, ".ko.gz") == 0);
}

/* Whether the n bytes at a name module, '-' and '_' alike (as modprobe compares them). */
static int same_module(const char *a, size_t n, const char *module)
{
	size_t i;

	for (i = 0; i < n && module[i]; i++) {
		char x = a[i] == '-' ? '_' : a[i], y = module[i] == '-' ? '_' : module[i];

		if (x != y)
			return 0;
	}
	return i == n && !module[i];
}

int mod_options(const char *cmdline, const char *module, char *out, size_t len)
{
	const char *p = cmdline, *tok;
	size_t used = 0, wlen;
	int fits = 1;

	if (len)
		out[0] = '\0';
	while ((tok = cmdline_word(&p, &wlen))) {
		const char *dot, *end = tok + wlen;

		if (end - tok == 2 && tok[0] == '-' && tok[1] == '-')
			break; /* the rest is for the live root's init */
		dot = memchr(tok, '.', (size_t)(end - tok));
		/* module.param[=value]: the dot comes before any '=', the parameter is not empty */
		if (!dot || dot == tok || dot + 1 == end || dot[1] == '=' || memchr(tok, '=', (size_t)(dot - tok)) ||
		    !same_module(tok, (size_t)(dot - tok), module))
			continue;
		dot++;
		if (used + (used ? 1 : 0) + (size_t)(end - dot) + 1 > len) {
			fits = 0;
			continue;
		}
		if (used)
			out[used++] = ' ';
		memcpy(out + used, dot, (size_t)(end - dot));
		used += (size_t)(end - dot);
		out[used] = '\0';
	}
	return fits ? 0 : -1;
}

static int count_lines(const char *t)
{
	int n = 1;

	for (; *t; t++)
		n += *t == '\n';
	return n;
}

/* Next line of text (terminated in place), or NULL at the end. */
static char *next_line(char **t)
{
	char *s = *t, *nl;

	if (!s || !*s)
		return NULL;
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		*t = nl + 1;
	} else {
		*t = s + strlen(s);
	}
	return s;
}

int mod_find(const struct mod_index *ix, const char *name)
{
	char n[MOD_NAME_LEN];
	int i;

	if (mod_name_of(name, n, sizeof(n)) != 0)
		return -1;
	for (i = 0; i < ix->nentry; i++)
		if (strcmp(ix->entry[i].name, n) == 0)
			return i;
	return -1;
}

/* modules.dep: every module first, so a dependency listed before its own line resolves; each entry's dependency
 * list is left after its ':' (dep[0] its offset in dep_text, ndeps -1: unresolved). 0, or -1 with the line in err. */
static int dep_lines(struct mod_index *ix, char *dep_text, char *err, size_t elen)
{
	char *t, *line, *colon;
	int ln = 0;

	for (t = dep_text; (line = next_line(&t)) != NULL;) {
		struct mod_entry *e = &ix->entry[ix->nentry];

		ln++;
		if (!*line || *line == '#')
			continue;
		colon = strchr(line, ':');
		if (!colon) {
			snprintf(err, elen, "modules.dep line %d: no ':' in '%.80s'", ln, line);
			return -1;
		}
		*colon = '\0';
		e->path = line;
		if (mod_name_of(line, e->name, sizeof(e->name)) != 0) {
			snprintf(err, elen, "modules.dep line %d: bad module path '%.80s'", ln, line);
			return -1;
		}
		e->ndeps = -1;
		e->dep[0] = (int)(colon + 1 - dep_text);
		ix->nentry++;
	}
	return 0;
}

/* Each entry's dependency list resolved to indexes of entries. 0, or -1 with the module in err. */
static int dep_resolve(struct mod_index *ix, char *dep_text, char *err, size_t elen)
{
	char *tok, *save;

	for (int i = 0; i < ix->nentry; i++) {
		struct mod_entry *e = &ix->entry[i];
		char *deps = dep_text + e->dep[0];

		e->ndeps = 0;
		for (tok = strtok_r(deps, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
			int d = mod_find(ix, tok);

			if (d < 0) {
				snprintf(err, elen, "modules.dep: %s needs %.80s, which has no line of its own",
					 e->name, tok);
				return -1;
			}
			if (e->ndeps >= MOD_MAX_DEPS) {
				snprintf(err, elen, "modules.dep: %s has more than %d dependencies", e->name,
					 MOD_MAX_DEPS);
				return -1;
			}
			e->dep[e->ndeps++] = d;
		}
	}
	return 0;
}

/* modules.alias: 'alias PATTERN MODULE' lines. 0, or -1 with the line in err. */
static int alias_lines(struct mod_index *ix, char *alias_text, char *err, size_t elen)
{
	char *t, *line, *save;
	int ln = 0;

	for (t = alias_text; (line = next_line(&t)) != NULL;) {
		char *pat, *mod;

		ln++;
		if (!*line || *line == '#')
			continue;
		if (strncmp(line, "alias ", 6) != 0 || !(pat = strtok_r(line + 6, " \t", &save)) ||
		    !(mod = strtok_r(NULL, " \t", &save))) {
			snprintf(err, elen, "modules.alias line %d: not 'alias PATTERN MODULE'", ln);
			return -1;
		}
		ix->alias[ix->nalias].pattern = pat;
		ix->alias[ix->nalias].module = mod;
		ix->nalias++;
	}
	return 0;
}

int mod_index_parse(struct mod_index *ix, char *alias_text, char *dep_text, char *err, size_t elen)
{
	memset(ix, 0, sizeof(*ix));
	err[0] = '\0';
	ix->entry = calloc((size_t)count_lines(dep_text), sizeof(*ix->entry));
	ix->alias = calloc((size_t)count_lines(alias_text), sizeof(*ix->alias));
	if (!ix->entry || !ix->alias) {
		snprintf(err, elen, "out of memory");
		mod_index_free(ix);
		return -1;
	}
	if (dep_lines(ix, dep_text, err, elen) != 0 || dep_resolve(ix, dep_text, err, elen) != 0 ||
	    alias_lines(ix, alias_text, err, elen) != 0) {
		mod_index_free(ix);
		return -1;
	}
	return 0;
}

void mod_index_free(struct mod_index *ix)
{
	free(ix->alias);
	free(ix->entry);
	memset(ix, 0, sizeof(*ix));
}

int mod_match(const struct mod_index *ix, const char *modalias, int out[], int max)
{
	int i, j, m, n = 0;

	for (i = 0; i < ix->nalias && n < max; i++) {
		if (fnmatch(ix->alias[i].pattern, modalias, 0) != 0)
			continue;
		m = mod_find(ix, ix->alias[i].module);
		if (m < 0)
			continue;
		for (j = 0; j < n && out[j] != m; j++)
			;
		if (j == n)
			out[n++] = m;
	}
	return n;
}

/* Depth-first: a module's dependencies before it; depth bounds a circular modules.dep. */
static int visit(const struct mod_index *ix, int m, int out[], int *n, int max, int depth)
{
	int i;

	for (i = 0; i < *n; i++)
		if (out[i] == m)
			return 0;
	if (depth > MOD_MAX_DEPS)
		return -1;
	/* depmod lists the deepest dependency last */
	for (i = ix->entry[m].ndeps - 1; i >= 0; i--)
		if (visit(ix, ix->entry[m].dep[i], out, n, max, depth + 1) != 0)
			return -1;
	if (*n >= max)
		return -1;
	out[(*n)++] = m;
	return 0;
}

int mod_load_order(const struct mod_index *ix, int m, int out[], int max)
{
	int n = 0;

	if (m < 0 || m >= ix->nentry)
		return -1;
	return visit(ix, m, out, &n, max, 0) == 0 ? n : -1;
}

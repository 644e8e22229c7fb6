/* init-paths.c - libFuzzer target for the init's paths.conf / live.persist.paths parser (initramfs/init/pathlist.c):
 * byte 0 is how many paths are kept (up to MAX_PATHS), byte 1 the size of the error buffer, the rest the text.
 * Every path given back is clean and allowed, and its store key (paths_key) turns back into it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pathlist.h"

/* "%2F" -> "/", "%25" -> "%": what paths_key made of path. */
static int key_is(const char *key, const char *path)
{
	const char *k = key, *p = path + 1;

	for (; *k; p++) {
		if (k[0] == '%' && k[1] == '2' && (k[2] == 'F' || k[2] == '5')) {
			if (*p != (k[2] == 'F' ? '/' : '%'))
				return 0;
			k += 3;
		} else if (*k == '%' || *k == '/' || *k++ != *p) {
			return 0;
		}
	}
	return *p == '\0';
}

static int clean(const char *p)
{
	static const char *const no[] = {"/proc", "/sys", "/dev", "/run"};
	size_t i, n = strlen(p);

	if (n == 0 || n >= PATH_LEN || p[0] != '/' || p[n - 1] == '/' || strstr(p, "//") || strstr(p, "/./") ||
	    strstr(p, "/../") || strchr(p, ',') || strchr(p, '\n'))
		return 0;
	if ((n >= 2 && strcmp(p + n - 2, "/.") == 0) || (n >= 3 && strcmp(p + n - 3, "/..") == 0))
		return 0;
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strncmp(p, no[i], strlen(no[i])) == 0 && (p[strlen(no[i])] == '\0' || p[strlen(no[i])] == '/'))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *err, (*out)[PATH_LEN], key[PATH_LEN];
	int max, n, i, j;
	size_t elen, klen;

	if (size < 2)
		return 0;
	max = data[0] % (MAX_PATHS + 1);
	elen = data[1];
	text = malloc(size - 1); /* exact sizes: ASan sees any overread */
	err = malloc(elen ? elen : 1);
	out = malloc(max ? (size_t)max * PATH_LEN : 1);
	if (!text || !err || !out)
		abort();
	memcpy(text, data + 2, size - 2);
	text[size - 2] = '\0';
	memset(err, 'x', elen ? elen : 1); /* unterminated: only what the parser writes may be read */
	n = paths_parse(text, out, max, err, elen);
	if (n < 0 || n > max || (elen && !memchr(err, 0, elen)))
		abort();
	for (i = 0; i < n; i++) {
		if (!memchr(out[i], 0, PATH_LEN) || !clean(out[i]))
			abort();
		for (j = 0; j < i; j++)
			if (strcmp(out[i], out[j]) == 0)
				abort();
		klen = (size_t)data[1] % PATH_LEN;
		if (paths_key(out[i], key, sizeof(key)) != 0 || !key_is(key, out[i]))
			abort();
		if (paths_key(out[i], key, klen) == 0 && (strlen(key) >= klen || !key_is(key, out[i])))
			abort();
	}
	free(text);
	free(err);
	free(out);
	return 0;
}

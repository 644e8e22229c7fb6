/* init-meta.c - libFuzzer target for the store's meta file (initramfs/init/meta.c): byte 0 is the size of the
 * buffer meta_explain writes to, the rest the file's text (a stranger's stick holds it). The parsed values agree
 * with a walk of the text of its own (the last line of each key wins; format= is 1 to 6 decimal digits, anything
 * else makes it -1 and meta_parse fail), strings are terminated and truncated, never overrun; the verdict follows
 * the format; the console line fits its buffer, is terminated, and names both versions for a newer store. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

/* The value of the last line "key=..." of text, its length in *vlen; NULL when there is none. */
static const char *last_value(const char *text, const char *key, size_t *vlen)
{
	const char *line = text, *found = NULL;
	size_t klen = strlen(key);

	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *eq = memchr(line, '=', len);

		if (eq && (size_t)(eq - line) == klen && memcmp(line, key, klen) == 0) {
			found = eq + 1;
			*vlen = len - klen - 1;
		}
		line += len;
		if (*line == '\n')
			line++;
	}
	return found;
}

static void string_is(const char *got, size_t size, const char *text, const char *key)
{
	size_t vlen = 0, want;
	const char *v = last_value(text, key, &vlen);

	if (!memchr(got, 0, size))
		abort();
	want = v ? (vlen < size - 1 ? vlen : size - 1) : 0;
	if (strlen(got) != want || (want && memcmp(got, v, want) != 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct meta m;
	char *text, *buf;
	size_t blen, vlen = 0, i;
	const char *v;
	long want = META_FORMAT_NONE;
	int rc;
	enum meta_verdict verdict;

	if (size < 1)
		return 0;
	blen = data[0];
	text = malloc(size); /* exact size: ASan sees any overread */
	buf = malloc(blen ? blen : 1);
	if (!text || !buf)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	rc = meta_parse(text, &m);
	v = last_value(text, "format", &vlen);
	if (v) {
		want = vlen >= 1 && vlen <= 6 ? 0 : -1;
		for (i = 0; want >= 0 && i < vlen; i++)
			want = v[i] >= '0' && v[i] <= '9' ? want * 10 + (v[i] - '0') : -1;
	}
	if (m.format != want || rc != (want < 0 ? -1 : 0))
		abort();
	string_is(m.image, sizeof(m.image), text, "image");
	string_is(m.created, sizeof(m.created), text, "created");
	verdict = meta_judge(&m);
	if (verdict != (want < 0            ? META_BAD :
			want > STORE_FORMAT ? META_NEWER :
			want < STORE_FORMAT ? META_UPGRADE :
					      META_CURRENT))
		abort();
	if (meta_judge(NULL) != META_FRESH)
		abort();
	memset(buf, 'x', blen ? blen : 1); /* unterminated: only what meta_explain writes may be read */
	if (blen) {
		meta_explain(&m, verdict, buf, blen);
		if (!memchr(buf, 0, blen))
			abort();
		if (verdict == META_NEWER && blen == 255) {
			char both[128];

			snprintf(both, sizeof(both),
				 "format %ld, made by a newer liveunion; this one knows formats up to %d", m.format,
				 STORE_FORMAT);
			if (!strstr(buf, both))
				abort();
		}
	}
	free(text);
	free(buf);
	return 0;
}

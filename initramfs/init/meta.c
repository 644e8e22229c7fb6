/* The store's meta file: parsing and the format verdict (meta.h). Pure: the host unit tests and the fuzz
 * target run it as the init does. */
#include "meta.h"

#include <string.h>

#include "text.h"

/* The value of a "key=value" line into out (truncated to fit, always terminated). */
static void value_copy(const char *v, size_t vlen, char *out, size_t olen)
{
	if (vlen >= olen)
		vlen = olen - 1;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
}

static long format_value(const char *v, size_t vlen)
{
	long n = 0;
	size_t i;

	if (vlen == 0 || vlen > 6)
		return -1;
	for (i = 0; i < vlen; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		n = n * 10 + (v[i] - '0');
	}
	return n;
}

int meta_parse(const char *text, struct meta *m)
{
	const char *line = text, *eq;
	size_t len, klen;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->format = META_FORMAT_NONE;
	while (*line) {
		len = strcspn(line, "\n");
		eq = memchr(line, '=', len);
		if (eq) {
			klen = (size_t)(eq - line);
			const char *v = eq + 1;
			size_t vlen = len - klen - 1;

			if (klen == 6 && memcmp(line, "format", 6) == 0) {
				m->format = format_value(v, vlen);
				rc = m->format < 0 ? -1 : 0;
			} else if (klen == 5 && memcmp(line, "image", 5) == 0) {
				value_copy(v, vlen, m->image, sizeof(m->image));
			} else if (klen == 7 && memcmp(line, "created", 7) == 0) {
				value_copy(v, vlen, m->created, sizeof(m->created));
			}
		}
		line += len;
		if (*line == '\n')
			line++;
	}
	return rc;
}

enum meta_verdict meta_judge(const struct meta *m)
{
	if (!m)
		return META_FRESH;
	if (m->format < 0)
		return META_BAD;
	if (m->format > STORE_FORMAT)
		return META_NEWER;
	if (m->format < STORE_FORMAT)
		return META_UPGRADE;
	return META_CURRENT;
}

void meta_explain(const struct meta *m, enum meta_verdict v, char *buf, size_t len)
{
	switch (v) {
	case META_FRESH: text_fmt(buf, len, "a new store, format %d", STORE_FORMAT); break;
	case META_CURRENT: text_fmt(buf, len, "format %d", STORE_FORMAT); break;
	case META_UPGRADE:
		text_fmt(buf, len,
			 "format %ld%s, upgraded to format %d (the meta file gains its format= line; nothing "
			 "else changes)",
			 m->format, m->format == META_FORMAT_NONE ? " (meta has no format= line)" : "", STORE_FORMAT);
		break;
	case META_NEWER:
		text_fmt(buf, len, "format %ld, made by a newer liveunion; this one knows formats up to %d", m->format,
			 STORE_FORMAT);
		break;
	case META_BAD: text_fmt(buf, len, "its meta file has a format= line that is not a version number"); break;
	}
}

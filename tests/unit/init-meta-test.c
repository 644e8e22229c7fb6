/* Unit tests: the store's meta file (meta.c): parsing what the init wrote and what a newer or damaged store
 * holds, and the format verdict every boot with a store acts on. */
#include <stdio.h>
#include <string.h>

#include "init-test.h"
#include "meta.h"

static enum meta_verdict judge(const char *text, struct meta *m)
{
	(void)meta_parse(text, m);
	return meta_judge(m);
}

int main(void)
{
	char why[200], big[400];
	struct meta m;

	/* what this init writes reads back as current */
	CHECK(meta_parse("format=1\nimage=2026120501020300\ncreated=2026-12-05T01:02:03Z\nlast_used=x\n", &m) == 0,
	      "parse the init's own meta");
	CHECK(m.format == 1, "format %ld", m.format);
	CHECK_STR(m.image, "2026120501020300");
	CHECK_STR(m.created, "2026-12-05T01:02:03Z");
	CHECK(meta_judge(&m) == META_CURRENT, "current");
	/* previous_image= is not image= */
	CHECK(meta_parse("previous_image=A\nimage=B\n", &m) == 0 && strcmp(m.image, "B") == 0, "image %s", m.image);
	CHECK(meta_parse("previous_image=A\n", &m) == 0 && m.image[0] == '\0', "image %s", m.image);
	/* no meta file: a new store */
	CHECK(meta_judge(NULL) == META_FRESH, "fresh");
	meta_explain(NULL, META_FRESH, why, sizeof(why));
	CHECK_STR(why, "a new store, format 1");
	/* newer: refused, both versions named */
	CHECK(judge("format=2\nimage=x\n", &m) == META_NEWER, "format 2 is newer");
	meta_explain(&m, META_NEWER, why, sizeof(why));
	CHECK(strstr(why, "format 2") && strstr(why, "up to 1"), "%s", why);
	CHECK(judge("format=999999\n", &m) == META_NEWER, "format 999999 is newer");
	/* older: no format= line is format 0, upgraded by its one step */
	CHECK(judge("image=x\ncreated=y\n", &m) == META_UPGRADE && m.format == META_FORMAT_NONE, "no format line");
	meta_explain(&m, META_UPGRADE, why, sizeof(why));
	CHECK(strstr(why, "format 0") && strstr(why, "upgraded to format 1"), "%s", why);
	CHECK(judge("", &m) == META_UPGRADE, "empty meta");
	/* not a version: refused, never guessed */
	CHECK(meta_parse("format=two\n", &m) == -1 && meta_judge(&m) == META_BAD, "format=two");
	CHECK(judge("format=\n", &m) == META_BAD, "format= empty");
	CHECK(judge("format=-1\n", &m) == META_BAD, "format=-1");
	CHECK(judge("format=1 \n", &m) == META_BAD, "trailing blank");
	CHECK(judge("format=1234567\n", &m) == META_BAD, "seven digits");
	CHECK(judge("format=99999999999999999999999\n", &m) == META_BAD, "overflow");
	/* the last line wins, also without a final newline; CRLF is not a version */
	CHECK(judge("format=2\nformat=1", &m) == META_CURRENT, "last wins");
	CHECK(judge("format=1\r\n", &m) == META_BAD, "CRLF");
	/* long values are cut to fit, terminated */
	memset(big, 'a', sizeof(big));
	memcpy(big, "image=", 6);
	big[sizeof(big) - 1] = '\0';
	CHECK(meta_parse(big, &m) == 0 && strlen(m.image) == sizeof(m.image) - 1, "long image %zu", strlen(m.image));
	return t_summary();
}

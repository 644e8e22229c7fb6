/* Tiny assertion helpers shared by the init's C unit tests. */
#ifndef INIT_TEST_H
#define INIT_TEST_H
#include <stdio.h>
#include <string.h>

static int t_pass, t_fail;

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (cond) {                                                             \
			t_pass++;                                                       \
		} else {                                                                \
			t_fail++;                                                       \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
		}                                                                       \
	} while (0)

#define CHECK_STR(a, b) CHECK(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))

static int t_summary(void)
{
	printf("%d passed, %d failed\n", t_pass, t_fail);
	return t_fail ? 1 : 0;
}
#endif

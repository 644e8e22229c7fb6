/* init-cmdline.c - libFuzzer target for the init's kernel command line parser (initramfs/init/cmdline.c): the
 * input is /proc/cmdline, and as well one size value (cmdline_size_parse). Every key ends with a value of its type.
 * The same line gives modules their options (mod_options, modalias.c): what it writes is terminated and fits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "modalias.h"

static void warned(void *ctx, const char *text)
{
	(void)ctx;
	if (strlen(text) >= VALUE_MAX * 2 + 200)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cmdline c;
	struct size_spec sz;
	char *text = malloc(size + 1); /* exact size: ASan sees any overread */
	int k, i;

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	cmdline_parse(text, &c, warned, NULL);
	for (k = 0; k < K_COUNT; k++) {
		const struct key_def *d = &key_table[k];
		const struct value *v = &c.v[k];

		if (!memchr(v->s, 0, sizeof(v->s)))
			abort();
		switch (d->type) {
		case T_UINT:
			if (v->u > d->max)
				abort();
			break;
		case T_SIZE:
			if (v->size.percent ? v->size.n < 1 || v->size.n > 100 : v->size.n == 0)
				abort();
			break;
		case T_ENUM:
			for (i = 0; d->choices[i]; i++)
				;
			if (v->choice < -1 || v->choice >= i || (v->choice >= 0 && strcmp(v->s, d->choices[v->choice])))
				abort();
			break;
		case T_PATH:
			if (v->s[0] != '/')
				abort();
			break;
		default: break;
		}
	}
	{
		char opts[64];
		size_t n;

		memset(opts, 'x', sizeof(opts));
		if (mod_options(text, "usb_storage", opts, sizeof(opts)) < -1)
			abort();
		n = strnlen(opts, sizeof(opts));
		if (n == sizeof(opts) || opts[0] == ' ')
			abort();
	}
	if (cmdline_size_parse(text, &sz) == 0 && (sz.percent ? sz.n < 1 || sz.n > 100 : sz.n == 0))
		abort();
	free(text);
	return 0;
}

/* update-env.c - libFuzzer target for the GRUB environment block reader of `liveunion update`
 * (liveunion/cmd/cmd_update.c: env_whole, env_parse, env_format): the input is a block's first bytes, padded with
 * '#' to 1024 as the block is. Whatever the bytes: a block taken has slot a or b, its values fit and end; formatted
 * again it is a whole block (header, slot=) of 1024 bytes that reads back to the same values. Run by
 * tests/unit/update-env.sh (clang -fsanitize=fuzzer,address,undefined). */
#include "../../liveunion/cmd/cmd_update.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char block[ENV_BYTES], out[ENV_BYTES + 1];
	struct grubenv e, again;

	if (size > ENV_BYTES)
		size = ENV_BYTES;
	memset(block, '#', sizeof block);
	memcpy(block, data, size);
	(void)env_whole(block);
	(void)tries_known(block);
	if (env_parse(block, &e) != 0)
		return 0;
	if ((strcmp(e.slot, "a") && strcmp(e.slot, "b")) || !memchr(e.tries, '\0', sizeof e.tries) ||
	    !memchr(e.failed, '\0', sizeof e.failed) || !memchr(e.other, '\0', sizeof e.other))
		abort();
	if (env_format(&e, out) != 0)
		return 0;
	if (!env_whole(out) || env_parse(out, &again) != 0 || strcmp(e.slot, again.slot) ||
	    strcmp(e.tries, again.tries) || strcmp(e.failed, again.failed) || strcmp(e.other, again.other))
		abort();
	return 0;
}

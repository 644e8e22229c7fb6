#ifndef LIVE_VERITY_FILES_H
#define LIVE_VERITY_FILES_H
/* The files of a layer that the init reads itself before dm-verity is set up (verity.c): its hash tree's
 * superblock, NAME.roothash and NAME.roothash.p7s. All come from the untrusted medium: each is refused unless it
 * is a regular file of a sensible size, and what they say is checked by the kernel (the signature, every block). */
#include <stddef.h>

#include "plan.h"

/* veritysetup's on-disk superblock (cryptsetup lib/verity/verity.c), little-endian, 512 bytes. */
struct verity_sb {
	char algorithm[33];
	unsigned data_block_size, hash_block_size;
	unsigned long long data_blocks;
	unsigned salt_size;
	unsigned char salt[256];
};

/* The superblock of l's hash tree (l->hash_file): 0, or -1 with fail() set naming the layer. */
int verity_read_sb(const struct layer *l, struct verity_sb *sb);
/* A signed layer's root hash into l->root_hash and its signature into this thread's keyring under desc (the name
 * the verity table gives as root_hash_sig_key_desc): the key's id, or -1 with fail() set. */
long verity_sig_load(struct layer *l, char *desc, size_t dlen);
/* The key verity_sig_load made out of the keyring again (key < 0: nothing). */
void verity_key_drop(const struct layer *l, long key, const char *desc);
#endif

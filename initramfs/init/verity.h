#ifndef LIVE_VERITY_H
#define LIVE_VERITY_H
#include <stddef.h>

#include "plan.h"

/* live.verify=: put layer l (its squashfs already on /dev/loop<l->loop>) behind dm-verity, set up with
 * the device-mapper ioctls: the hash tree file beside the layer (live/NN-name.verity, veritysetup's format
 * with its superblock) on a second loop device, a read-only "verity" table with the root hash from the
 * command line, then the first and last blocks of the layer read through it so a damaged or altered
 * medium stops the boot here, naming the layer. dev gets the device to mount: /dev/dm-N, or the loop
 * device when the plan does not verify. 0, or -1 with fail() set. */
int verity_layer(const struct plan *p, struct layer *l, char *dev, size_t dlen);
/* live.check: read all of the layer's device with a progress line; a block that cannot be read
 * (through dm-verity: one that does not match the root hash) fails naming the layer. */
int verity_check(const struct layer *l, const char *dev);
#endif

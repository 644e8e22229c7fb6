/* What the init (initramfs/init/) and the `liveunion` command (liveunion/) must agree on, defined once
 * and included by both: the init writes these places and names, the command reads them (and `save`
 * writes layers the init stacks). A change here is a change of format between two releases: the store
 * keeps its files under a versioned directory (STORE_VDIR) for that reason. */
#ifndef LIVEUNION_CONTRACT_H
#define LIVEUNION_CONTRACT_H

#include <stddef.h>

/* /run/live in the live system. The names under it are relative: the init's host tests run it
 * under another root. */
#define LIVE_RUN "/run/live"
#define LIVE_MEDIUM "medium" /* the boot medium, read-only */
#define LIVE_LAYERS "layers" /* LIVE_LAYERS/NN-name: each layer, read-only */
#define LIVE_UPPER "upper"   /* LIVE_UPPER/upper and LIVE_UPPER/work: the overlay's writable side */
#define LIVE_STORE "store"   /* the persistence file system, when there is one */
#define LIVE_PLAN "plan"     /* the executed plan: key=value lines */

/* The persistence store: an ext4 file system labelled STORE_LABEL, or the image file STORE_IMAGE on a
 * FAT/exFAT partition. Nothing outside STORE_VDIR is ever touched. */
#define STORE_LABEL "liveunion-rw"
#define STORE_IMAGE "liveunion-rw.img"
#define STORE_VDIR "liveunion-v1"
#define STORE_UPPER "upper"           /* the overlay upper */
#define STORE_WORK "work"             /* the overlay workdir */
#define STORE_META "meta"             /* the image the store was made for, created, last used */
#define STORE_PATHS_CONF "paths.conf" /* live.persist.paths from the store: one directory a line */
#define STORE_PATHS "paths"           /* one upper and work per persistent directory */
#define STORE_LAYERS "layers"         /* NN-name.squashfs written by `liveunion save`, stacked at boot */
/* `liveunion store reset` asks for live.persist.reset from the running system: the next boot that mounts the
 * store read-write resets as that key does (upper/ and paths/ moved aside, never deleted), then removes it. */
#define STORE_RESET "reset"

/* A layer is NN-name.squashfs (NN two digits, lowest at the bottom), with NN-name.verity beside it. */
#define LAYER_SUFFIX ".squashfs"
#define LAYER_VERITY_SUFFIX ".verity"
/* A signed layer (docs/secure-boot.md): its root hash in hex, and a detached PKCS#7 signature of that text, as
 * systemd's NAME.roothash and NAME.roothash.p7s. */
#define LAYER_ROOTHASH_SUFFIX ".roothash"
#define LAYER_SIG_SUFFIX ".roothash.p7s"
#define LAYER_NN_MAX 99

/* NN of a name starting "NN-", else -1. */
static inline int layer_nn(const char *s)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' || s[2] != '-')
		return -1;
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* A character the name of a layer may hold: one that is safe in an overlay lowerdir list (no ':', ','
 * or '\\') and in the plan's comma-separated values. */
static inline int layer_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '+' || c == '-';
}

/* Whether the n bytes at s are a layer's stem NN-name (its file name without LAYER_SUFFIX): NN- and a name
 * of one or more layer_name_char. */
static inline int layer_stem_ok(const char *s, size_t n)
{
	size_t i;

	if (n < 4 || layer_nn(s) < 0)
		return 0;
	for (i = 3; i < n; i++)
		if (!layer_name_char((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Keys of the plan (LIVE_RUN "/" LIVE_PLAN) that programs other than the init read. */
#define PLAN_LAYERS_EXCLUDED "layers.excluded" /* layers live.layers= left out, comma-separated NN-name */

#endif

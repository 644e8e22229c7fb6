#ifndef LIVE_PLAN_H
#define LIVE_PLAN_H
#include <stdbool.h>
#include <stddef.h>

#include "cmdline.h"
#include "medium.h"
#include "plan_steps.h"

/* overlayfs stacks at most 500 lower layers; 128 keeps the plan small and is far more than a medium needs. */
#define MAX_LAYERS 128
#define MAX_LAYERS_TEXT "128"
#define PATH_LEN 256
#define ROOT_HASH_LEN 128 /* hex digits; sha512 at most */

struct layer {
	char name[64];        /* "10-base" */
	char file[PATH_LEN];  /* the squashfs file the loop device reads (medium, or the RAM copy) */
	char dir[PATH_LEN];   /* its mount point under run_live/layers */
	unsigned long long bytes;
	int loop;             /* loop device number, -1 before attaching */
	/* dm-verity (live.verify=): the hash tree file beside the layer, its loop device, the dm device */
	char root_hash[ROOT_HASH_LEN + 1];
	char hash_file[PATH_LEN];
	int hash_loop;        /* -1 when not verified */
	int dm_minor;         /* -1 when not verified; the layer is mounted from /dev/dm-N */
	bool saved;           /* from the store's liveunion-v1/layers/ (liveunion save), not the medium */
};

/* live.verify= forms. */
enum verify_mode { VERIFY_NONE, VERIFY_OFF, VERIFY_ON };

/* What the init found out before planning. */
struct facts {
	unsigned long long mem_total, mem_available; /* bytes, from /proc/meminfo */
};

struct plan {
	/* From the command line. */
	char medium_spec[VALUE_MAX];
	struct medium_want want;
	unsigned timeout;
	struct size_spec size;
	bool toram, panic, check, debug;
	int break_step; /* S_NONE or the step to stop before */
	char init[VALUE_MAX];
	char layer_filter[VALUE_MAX];
	char persist[VALUE_MAX]; /* persist.c picks the upper from it */
	char persist_flags[16];  /* "ro", "reset" */
	char persist_paths[VALUE_MAX]; /* live.persist.paths, then what was used */
	bool persist_paths_active;     /* the store is mounted and only persist_paths go to it */
	char verify[VALUE_MAX];
	enum verify_mode verify_mode;

	/* Where things go; a prefix makes the stack testable on a build host. */
	char run_live[PATH_LEN]; /* /run/live */
	char newroot[PATH_LEN];  /* /newroot */

	/* Facts and decisions. */
	struct facts facts;
	unsigned long long upper_bytes;
	char upper_kind[16]; /* "tmpfs"; persistence adds "store" */
	char device[PATH_LEN];
	char medium_fstype[16]; /* iso9660; a host test without iso9660 mounts a stand-in */
	struct iso_id id;
	int nlayers;            /* bottom first */
	struct layer layer[MAX_LAYERS];
	char layers_excluded[VALUE_MAX]; /* layers on the medium (or saved in the store) that live.layers= left out */
	char layers_unknown[VALUE_MAX];  /* live.layers= entries that name no layer found so far */
	int nsaved;             /* how many of the layers (the top ones below a persist layer) come from the store */
	char verify_result[200];
	char check_result[200];
	char toram_result[200];
	char persist_result[PATH_LEN + 200];
	int done;               /* steps finished, in order */
};

/* live.persist= forms. */
enum persist_kind { PK_AUTO, PK_OFF, PK_LABEL, PK_UUID, PK_PARTUUID, PK_FILE, PK_BAD };
enum persist_kind persist_kind(const char *spec);
#define MAX_PATHS 16
/* live.persist.paths (comma or newline separated) -> clean absolute paths, duplicates dropped.
 * Returns how many; a bad entry is skipped and named in err ("" when all were good). */
int persist_paths_parse(const char *list, char out[][PATH_LEN], int max, char *err, size_t elen);
/* A path as one directory name in the store: "/etc/ssh" -> "etc%2Fssh" (and "%" -> "%25"). -1 if too long. */
int persist_path_key(const char *path, char *out, size_t len);

void plan_make(const struct cmdline *c, const struct facts *f, const char *run_live, const char *newroot,
	       struct plan *p);
/* Choose layers from the file names in live/ (any order); bottom first by name, live.layers= applied.
 * Returns the number chosen, -1 with why in err. Names that are not NN-name.squashfs are skipped.
 * Entries of live.layers= that name none of them go to layers_unknown: they may name a saved layer of
 * the store, which is found later (plan_add_saved); plan_check_filter then refuses what is left. */
int plan_set_layers(struct plan *p, const char *const files[], int n, char *err, size_t elen);
/* Saved layers (liveunion save) from the file names in dir (the store's liveunion-v1/layers, any order):
 * added above the layers planned so far, by name, live.layers= applied, marked saved. A name the medium
 * already has, and what MAX_LAYERS leaves no room for, is skipped and named in note. Returns how many
 * were added. */
int plan_add_saved(struct plan *p, const char *const files[], int n, const char *dir, char *note, size_t nlen);
/* Remove the saved layers from the plan again (their store could not be used). */
void plan_drop_saved(struct plan *p);
/* 0, or -1 with why in err when live.layers= names a layer that is neither on the medium nor saved
 * in the store: a typo must not boot a different system. */
int plan_check_filter(const struct plan *p, char *err, size_t elen);
/* The root hash live.verify= gives for a layer: 0 and the hex digits in hash; -1 with why in err
 * (not listed, listed twice, not hex). */
int plan_verify_hash(const char *spec, const char *name, char *hash, size_t hlen, char *err, size_t elen);
/* Whether copying the layers to RAM leaves enough memory; the why goes to note. */
bool plan_toram_fits(const struct plan *p, char *note, size_t nlen);
/* key=value lines. Returns the length written (truncated to len-1). */
size_t plan_print(const struct plan *p, char *buf, size_t len);
#endif

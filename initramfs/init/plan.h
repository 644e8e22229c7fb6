#ifndef LIVE_PLAN_H
#define LIVE_PLAN_H
#include <stdbool.h>
#include <stddef.h>

#include "cmdline.h"
#include "medium.h"
#include "netcfg.h"
#include "plan_steps.h"

/* overlayfs stacks at most 500 lower layers; 128 keeps the plan small and is far more than a medium needs. */
#define MAX_LAYERS 128
#define MAX_LAYERS_TEXT "128"
#define PATH_LEN 256
#define ROOT_HASH_LEN 128 /* hex digits; sha512 at most */

struct layer {
	char name[64];       /* "10-base" */
	char file[PATH_LEN]; /* the squashfs file the loop device reads (medium, or the RAM copy) */
	char dir[PATH_LEN];  /* its mount point under run_live/layers */
	unsigned long long bytes;
	int loop; /* loop device number, -1 before attaching */
	/* dm-verity (live.verify=): the hash tree file beside the layer, its loop device, the dm device */
	char root_hash[ROOT_HASH_LEN + 1];
	char hash_file[PATH_LEN];
	int hash_loop; /* -1 when not verified */
	int dm_minor;  /* -1 when not verified; the layer is mounted from /dev/dm-N */
	bool saved;    /* from the store's liveunion-v1/layers/ (liveunion save), not the medium */
};

/* live.persist= forms. */
enum persist_kind { PK_AUTO, PK_OFF, PK_LABEL, PK_UUID, PK_PARTUUID, PK_FILE, PK_BAD };
#define MAX_PATHS 16

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
	char persist[VALUE_MAX]; /* live.persist= as written, for the messages */
	enum persist_kind persist_kind;
	char persist_arg[VALUE_MAX]; /* what follows LABEL=, UUID=, PARTUUID= or file: */
	bool persist_ro, persist_reset;
	unsigned persist_timeout;      /* live.persist.timeout: seconds to wait for a store's passphrase, 0 for ever */
	char persist_paths[VALUE_MAX]; /* live.persist.paths as written */
	char verify[VALUE_MAX];
	enum verify_mode verify_mode;
	/* Network boot: live.fetch= URLs or live.nbd= HOST[:PORT]/EXPORT (at most one of them), ip=, BOOTIF= */
	char fetch[VALUE_MAX];
	char nbd[VALUE_MAX];
	struct net_ip ip;
	char bootif_mac[18];

	/* Where things go; a prefix makes the stack testable on a build host. */
	char run_live[PATH_LEN]; /* /run/live */
	char newroot[PATH_LEN];  /* /newroot */

	/* Facts and decisions. */
	struct facts facts;
	unsigned long long upper_bytes;
	char upper_kind[16]; /* "tmpfs"; persistence adds "store" */
	char device[PATH_LEN];
	char medium_fstype[16]; /* iso9660; a host test without iso9660 mounts a stand-in */
	/* live.iso=: the ISO is a file on a partition (a multi-boot stick); device is then the loop device */
	char iso_path[PATH_LEN]; /* absolute, on the host partition */
	char iso_host[PATH_LEN]; /* the partition holding it ("/dev/sdb2"), once found */
	char iso_fstype[16];     /* its filesystem */
	struct iso_id id;
	int nlayers; /* bottom first */
	struct layer layer[MAX_LAYERS];
	char layers_excluded[VALUE_MAX]; /* layers on the medium (or saved in the store) that live.layers= left out */
	char layers_unknown[VALUE_MAX];  /* live.layers= entries that name no layer found so far */
	int nsaved; /* how many of the layers (the top ones below a persist layer) come from the store */
	char verify_result[200];
	char check_result[200];
	char toram_result[200];
	char persist_result[PATH_LEN + 200];
	int npaths; /* the store is mounted and only these paths go to it (paths.c) */
	char paths[MAX_PATHS][PATH_LEN];
	char net_result[200];     /* the interface, its address and how it got it; "" before the network step */
	char nbd_device[32];      /* live.nbd=: /dev/nbdN once connected */
	char kernel[8];           /* flavour: "pc" (modules in the initramfs) or "tiny" (built in) */
	char kernel_overlay[200]; /* which overlay module runs (modload.c) */
	int done;                 /* steps finished, in order */
	char adjusted[400]; /* values plan_make clamped (live.size=, live.timeout=), said on the console; "" if none */
};

enum persist_kind plan_persist_kind(const char *spec);

/* The smallest tmpfs upper and wait plan_make lets a command line ask for. */
#define UPPER_MIN (4ULL << 20)
#define TIMEOUT_MIN 1
/* Room the running system needs besides layers held in RAM (live.toram's copy, live.fetch's download). */
#define RAM_RESERVE (64ULL << 20)
void plan_make(const struct cmdline *c, const struct facts *f, const char *run_live, const char *newroot,
	       struct plan *p);
/* The root hash live.verify= gives for a layer: 0 and the hex digits in hash; -1 with why in err
 * (not listed, listed twice, not hex). */
int plan_verify_hash(const char *spec, const char *name, char *hash, size_t hlen, char *err, size_t elen);
/* Whether copying the layers to RAM leaves enough memory; the why goes to note. */
bool plan_toram_fits(const struct plan *p, char *note, size_t nlen);
/* key=value lines. Returns the length written (truncated to len-1). */
size_t plan_print(const struct plan *p, char *buf, size_t len);
#endif

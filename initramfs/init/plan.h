#ifndef LIVE_PLAN_H
#define LIVE_PLAN_H
#include <stdbool.h>
#include <stddef.h>

#include "cmdline.h"
#include "iso9660.h"
#include "meta.h"
#include "netcfg.h"
#include "pathlist.h"
#include "plan_steps.h"

/* overlayfs stacks at most 500 lower layers; 128 keeps the plan small and is far more than a medium needs. */
#define MAX_LAYERS 128
#define MAX_LAYERS_TEXT "128"
#define ROOT_HASH_LEN 128 /* hex digits; sha512 at most */

struct layer {
	char name[64];       /* "10-base" */
	char file[PATH_LEN]; /* the squashfs file the loop device reads (medium, or the RAM copy) */
	char dir[PATH_LEN];  /* its mount point under run_live/layers */
	unsigned long long bytes;
	int loop; /* loop device number, -1 before attaching */
	/* dm-verity (live.verify=): the root hash the plan gives this layer, attached when the layer is chosen ("" with
	 * why in no_hash when live.verify= has none for it), the hash tree file beside the layer, its loop device, the
	 * dm device */
	char root_hash[ROOT_HASH_LEN + 1];
	char no_hash[300];
	char hash_file[PATH_LEN];
	int hash_loop; /* -1 when not verified */
	int dm_minor;  /* -1 when not verified; the layer is mounted from /dev/dm-N */
	bool saved;    /* from the store's liveunion-v1/layers/ (liveunion save), not the medium */
	/* Not in live.verify= but NN-name.roothash and NN-name.roothash.p7s lie beside it: the root hash is read from
	 * the first and the kernel accepts it only with the second, a signature by a key of its trusted keyring. */
	bool sig;
};

/* live.persist= forms. */
enum persist_kind { PK_AUTO, PK_OFF, PK_LABEL, PK_UUID, PK_PARTUUID, PK_FILE, PK_BAD };

/* live.verify= forms. */
enum verify_mode { VERIFY_NONE, VERIFY_OFF, VERIFY_ON };
/* One NAME:HEX entry of live.verify=, as written: plan_root_hash judges it for the layer it names. */
struct verify_entry {
	char name[64];
	char hash[ROOT_HASH_LEN + 1]; /* the first ROOT_HASH_LEN digits */
	size_t digits;                /* how many were written */
	bool hex;                     /* all of them hexadecimal */
};
#define MAX_VERIFY (MAX_LAYERS * 2)

/* One live.layers= entry: a layer's whole stem (20-desktop) or its name without the number (desktop); exclude
 * for "-name". */
struct layer_pick {
	char name[64];
	bool exclude;
	bool too_long; /* longer than a layer name may be: names none, so it is refused as unknown */
};
#define MAX_PICKS (MAX_LAYERS * 2)

/* Where the layers come from over the network: live.fetch= or live.nbd= (at most one of them). */
enum net_boot { NET_NONE, NET_FETCH, NET_NBD };

/* What the init found out before planning. */
struct facts {
	unsigned long long mem_total, mem_available; /* bytes, from /proc/meminfo */
};

/* The command line's decisions, each key parsed once (plan_make); const once made. */
struct plan {
	char medium_spec[VALUE_MAX];
	struct medium_want want;
	unsigned timeout;
	struct size_spec size;
	bool toram, panic, check, debug;
	int break_step; /* S_NONE or the step to stop before */
	char init[VALUE_MAX];
	char layers_wanted[VALUE_MAX]; /* live.layers= as written, for the messages */
	int npicks;
	struct layer_pick pick[MAX_PICKS];
	char persist[VALUE_MAX]; /* live.persist= as written, for the messages */
	enum persist_kind persist_kind;
	char persist_arg[VALUE_MAX]; /* what follows LABEL=, UUID=, PARTUUID= or file: */
	bool persist_ro, persist_reset;
	unsigned persist_timeout; /* live.persist.timeout: seconds to wait for a store's passphrase, 0 for ever */
	/* live.persist.paths: given (else the store's paths.conf decides), the usable paths, what was refused */
	bool persist_paths_given;
	int npersist_paths;
	char persist_paths[MAX_PATHS][PATH_LEN];
	char persist_paths_bad[300];
	enum verify_mode verify_mode;
	int nverify;
	struct verify_entry verify[MAX_VERIFY];
	/* Network boot, ip=, BOOTIF=. A bad live.fetch= or live.nbd= is said by the medium step (net_bad), as a
	 * medium that is not found would be. */
	enum net_boot net;
	int nfetch;
	char fetch[FETCH_URL_MAX][FETCH_URL_LEN];
	struct nbd_spec nbd;
	char net_bad[300];
	struct net_ip ip;
	char bootif_mac[18];

	/* Where things go; a prefix makes the stack testable on a build host. */
	char run_live[PATH_LEN]; /* /run/live */
	char newroot[PATH_LEN];  /* /newroot */

	struct facts facts;
	unsigned long long upper_bytes; /* of a tmpfs upper */
	/* live.iso=: the ISO is a file on a partition (a multi-boot stick), absolute, on the host partition */
	char iso_path[PATH_LEN];
	char adjusted[400]; /* values plan_make clamped (live.size=, live.timeout=), said on the console; "" if none */
};

/* The store step's one decision (store_step.c): the store mounted on run_live/store read-write, read-only
 * (live.persist.ro: its upper is a lower layer) or only for its saved layers (live.persist=off: ro, noload), or none,
 * with why in persist_result. The upper step reads it. */
enum store_mode { SM_NONE, SM_RW, SM_RO, SM_SAVED };

struct store {
	enum store_mode mode;
	char dev[64];             /* block device holding the ext4 store (a partition, /dev/loopN, /dev/mapper/...) */
	char what[PATH_LEN + 64]; /* for the messages: "/dev/sda3 (LABEL=liveunion-rw)" */
	char host[PATH_LEN + 16]; /* where the FAT/exFAT holding the image file is mounted, or "" */
	char dir[PATH_LEN + 16];  /* run_live/store */
	bool ro;
	bool dev_ro;   /* ro because the device is (a write-protected stick), not because live.persist.ro asked */
	bool luks;     /* dev is a LUKS2 container (label or UUID matched its header): unlock before use */
	bool unlocked; /* dev is the LUKS mapping opened for it: closed again when the store is not used */
	int loopfd;    /* the loop device of an image file until the store is in use, else -1 */
	bool have_meta;
	struct meta meta; /* what its liveunion-v1/meta said (have_meta) */
};

struct modload;

/* What carrying the plan out found and did: the steps fill it. */
struct boot {
	char upper_kind[16]; /* "tmpfs"; persistence adds "store" */
	char device[PATH_LEN];
	char medium_fstype[16]; /* iso9660; a host test without iso9660 mounts a stand-in */
	char iso_host[PATH_LEN]; /* live.iso=: the partition holding it ("/dev/sdb2"), once found; device is then the loop device */
	char iso_fstype[16]; /* its filesystem */
	struct iso_id id;
	int nlayers; /* bottom first */
	struct layer layer[MAX_LAYERS];
	char layers_excluded[VALUE_MAX]; /* layers on the medium (or saved in the store) that live.layers= left out */
	bool pick_unknown[MAX_PICKS];    /* live.layers= entries that name no layer found so far */
	int nsaved;       /* how many of the layers (the top ones below a persist layer) come from the store */
	bool store_layer; /* the top layer is the store's upper, read-only (live.persist.ro) */
	struct store store;
	char verify_result[200];
	char check_result[200];
	char toram_result[200];
	char persist_result[PATH_LEN + 200];
	int npaths; /* the store is mounted and only these paths go to it (paths.c) */
	char paths[MAX_PATHS][PATH_LEN];
	char net_result[200];           /* the interface, its address and how it got it; "" before the network step */
	char nbd_device[32];            /* live.nbd=: /dev/nbdN once connected */
	char kernel[8];                 /* flavour: "pc" (modules in the initramfs) or "tiny" (built in) */
	char kernel_overlay[200];       /* which overlay module runs (modload.c) */
	struct modload *mods;           /* the kernel modules: every wait for a device polls them; NULL in host tests */
	int done;                       /* steps finished, in order */
	unsigned long long upper_bytes; /* the upper's room: the plan's tmpfs, or what the store has free */
};

enum persist_kind plan_persist_kind(const char *spec);

/* The smallest tmpfs upper and wait plan_make lets a command line ask for. */
#define UPPER_MIN (4ULL << 20)
#define TIMEOUT_MIN 1
/* Room the running system needs besides layers held in RAM (live.toram's copy, live.fetch's download). */
#define RAM_RESERVE (64ULL << 20)
void plan_make(const struct cmdline *c, const struct facts *f, const char *run_live, const char *newroot,
	       struct plan *p);
/* A boot state before the first step: nothing found yet, a tmpfs upper, an iso9660 medium. */
void plan_boot_init(const struct plan *p, struct boot *b);
/* The root hash live.verify= gives for a layer: 0 and the hex digits in hash; -1 with why in err
 * (not listed, listed twice, not hex). */
int plan_root_hash(const struct plan *p, const char *name, char *hash, size_t hlen, char *err, size_t elen);
/* Whether copying the layers to RAM leaves enough memory; the why goes to note. */
bool plan_toram_fits(const struct plan *p, const struct boot *b, char *note, size_t nlen);
/* key=value lines: the plan, then what the boot did so far. Returns the length written (truncated to len-1). */
size_t plan_print(const struct plan *p, const struct boot *b, char *buf, size_t len);
#endif

/* Saved layers: `liveunion save` writes the upper of a session as liveunion-v1/layers/NN-name.squashfs
 * into the store; at boot they go above the medium's layers, below the upper, read-only through loop
 * devices like the medium's. The boot menu was made before they existed, so dm-verity cannot cover them. */
#include "saved.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#include "layers.h"
#include "liveunion/contract.h"
#include "log.h"
#include "stack.h"
#include "util.h"

/* List store_dir/liveunion-v1/layers/ and plan its NN-name.squashfs files above the medium's layers
 * (layers_add_saved; what is left out and why goes to the console). Returns how many, 0 when there is no
 * such directory, -1 with fail() set when it cannot be read. */
static int saved_pick(const struct plan *p, struct boot *b, const char *store_dir)
{
	static char names[MAX_LAYERS * 2][DIR_NAME_LEN];
	const char *list[MAX_LAYERS * 2];
	char dir[PATH_LEN], note[VALUE_MAX];
	int n, added;
	size_t before;

	if (path_fmt(dir, sizeof(dir), "%s/" STORE_VDIR "/" STORE_LAYERS, store_dir) != 0)
		return -1;
	/* dot files, which dir_names passes over, are liveunion save's temporary files */
	if ((n = dir_names(dir, names, list, MAX_LAYERS * 2)) < 0) {
		if (fail_errno() != ENOENT)
			return -1;
		fail_clear();
		return 0;
	}
	before = strlen(b->layers_excluded);
	added = layers_add_saved(p, b, list, n, dir, note, sizeof(note));
	if (note[0])
		msg("saved layers: left out: %s", note);
	if (strlen(b->layers_excluded) > before)
		msg("live.layers=%s leaves out the saved layer(s): %s", p->layers_wanted,
		    b->layers_excluded + before + (before > 0));
	return added;
}

int saved_mount(const struct plan *p, struct boot *b, const char *what)
{
	int i = b->nlayers - b->nsaved;

	while (i < b->nlayers) {
		struct layer *l = &b->layer[i];

		if (p->verify_mode == VERIFY_ON && !l->hash_file[0])
			msg("WARNING: saved layer %s (from the store %s) is not covered by dm-verity: the boot menu has no "
			    "root hash for it",
			    l->name, what);
		if (stack_mount_layer(p, l) == 0) {
			stack_base_check(b, l);
			i++;
			continue;
		}
		/* one damaged saved layer must not keep the system from booting: loud, then without it */
		msg("saved layer %s is LEFT OUT: %s: %s", l->name, fail_what(), strerror(fail_errno()));
		fail_clear();
		memmove(l, l + 1, (size_t)(b->nlayers - i - 1) * sizeof(*l));
		b->nlayers--;
		b->nsaved--;
	}
	return b->nsaved;
}

void saved_unmount(struct boot *b)
{
	int i;

	for (i = b->nlayers - b->nsaved; i < b->nlayers; i++)
		if (b->layer[i].loop >= 0 && umount(b->layer[i].dir) != 0)
			msg("umount %s: %s", b->layer[i].dir, strerror(errno));
	layers_drop_saved(b);
}

void saved_plan(const struct plan *p, struct boot *b, const char *store_dir)
{
	if (saved_pick(p, b, store_dir) < 0) {
		msg("saved layers: %s: %s; none used", fail_what(), strerror(fail_errno()));
		fail_clear();
	}
}

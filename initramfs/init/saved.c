/* Saved layers: `liveunion save` writes the upper of a session as liveunion-v1/layers/NN-name.squashfs
 * into the store; at boot they go above the medium's layers, below the upper, read-only through loop
 * devices like the medium's. The boot menu was made before they existed, so dm-verity cannot cover them. */
#include "saved.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "log.h"
#include "stack.h"
#include "store.h"
#include "util.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int saved_pick(struct plan *p, const char *store_dir)
{
	static char names[MAX_LAYERS * 2][128];
	const char *list[MAX_LAYERS * 2];
	char dir[PATH_LEN], note[VALUE_MAX];
	DIR *d;
	struct dirent *e;
	int n = 0, added;
	size_t before;

	if (path_fmt(dir, sizeof(dir), "%s/" STORE_DIR "/layers", store_dir) != 0)
		return -1;
	if (!(d = opendir(dir))) {
		if (errno == ENOENT)
			return 0;
		return fail(errno, "open the saved layer directory %s", dir);
	}
	while ((e = readdir(d)) != NULL) {
		/* dot files are liveunion save's temporary files */
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(names[0]))
			continue;
		if (n == (int)(sizeof(list) / sizeof(list[0]))) {
			msg("saved layers: too many files in %s; only the first %d considered", dir, n);
			break;
		}
		memcpy(names[n], e->d_name, strlen(e->d_name) + 1);
		list[n] = names[n];
		n++;
	}
	if (closedir(d) != 0)
		return fail(errno, "close %s", dir);
	qsort(list, (size_t)n, sizeof(list[0]), by_name);
	before = strlen(p->layers_excluded);
	added = plan_add_saved(p, list, n, dir, note, sizeof(note));
	if (note[0])
		msg("saved layers: left out: %s", note);
	if (strlen(p->layers_excluded) > before)
		msg("live.layers=%s leaves out the saved layer(s): %s", p->layer_filter,
		    p->layers_excluded + before + (before > 0));
	return added;
}

int saved_mount(struct plan *p, const char *what)
{
	int i = p->nlayers - p->nsaved;

	while (i < p->nlayers) {
		struct layer *l = &p->layer[i];

		if (p->verify_mode == VERIFY_ON)
			msg("WARNING: saved layer %s (from the store %s) is not covered by dm-verity: the boot menu has no "
			    "root hash for it", l->name, what);
		if (stack_mount_layer(p, l) == 0) {
			i++;
			continue;
		}
		/* one damaged saved layer must not keep the system from booting: loud, then without it */
		msg("saved layer %s is LEFT OUT: %s: %s", l->name, fail_what(), strerror(fail_errno()));
		fail_clear();
		memmove(l, l + 1, (size_t)(p->nlayers - i - 1) * sizeof(*l));
		p->nlayers--;
		p->nsaved--;
	}
	return p->nsaved;
}

void saved_unmount(struct plan *p)
{
	int i;

	for (i = p->nlayers - p->nsaved; i < p->nlayers; i++)
		if (p->layer[i].loop >= 0 && umount(p->layer[i].dir) != 0)
			msg("umount %s: %s", p->layer[i].dir, strerror(errno));
	plan_drop_saved(p);
}

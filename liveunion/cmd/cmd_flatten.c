/* cmd_flatten.c - `liveunion flatten LAYER... -o DIR|FILE.squashfs`: the walk that writes the merged tree (to DIR,
 * or to the staging directory and pseudo definitions of flatten_squashfs.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "flatten.h"
#include "tool.h"

static const char usage_text[] =
	"usage: " PROG " flatten [--trusted|--userxattr] [--no-redirect] LAYER... -o DIR|FILE.squashfs\n"
	"Write the merged tree of the layers (top first, as in overlayfs lowerdir=) with owners,\n"
	"modes, times, xattrs (not overlay's own), hard links, symlinks and device nodes.\n"
	"A LAYER is a directory, a persistence store (its upper/ is used), or a squashfs/ext4\n"
	"image: as root images are mounted read-only in a private mount namespace; otherwise a\n"
	"squashfs is unpacked with unsquashfs (owners/devices/whiteouts in it are lost).\n"
	"DIR must not exist. FILE.squashfs is made with mksquashfs: as root from a staging\n"
	"directory beside it; without root from pseudo definitions alone (owners, devices,\n"
	"times; file contents read from the layers), which cannot carry xattrs (reported).\n"
	"Inputs are only read.\n";

void fl_err(struct fl *f, const char *what, const char *path)
{
	fprintf(stderr, PROG " flatten: %s %s: %s\n", what, path, strerror(errno));
	f->errors++;
}

static int copy_file(struct fl *f, const struct lu_node *n, const char *out)
{
	char buf[65536];
	ssize_t r = 0;
	int in = lu_open_node(f->u, n), o;

	if (in < 0) {
		errno = -in;
		return -1;
	}
	o = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (o < 0) {
		close(in);
		return -1;
	}
	while ((r = read(in, buf, sizeof buf)) > 0)
		if (write(o, buf, (size_t)r) != r) {
			r = -1;
			break;
		}
	close(in);
	if (close(o) < 0 || r < 0)
		return -1;
	return 0;
}

/* Owner, mode, xattrs and times, in the order that keeps them: chown clears
 * set-id bits, so chmod follows it; times go last. */
static void set_meta(struct fl *f, const struct lu_node *n, const char *real, const char *out)
{
	struct timespec ts[2] = {n->st.st_atim, n->st.st_mtim};

	if (lchown(out, n->st.st_uid, n->st.st_gid) < 0) {
		if (errno != EPERM)
			fl_err(f, "chown", out);
		else
			f->lost_owner++;
	}
	if (!S_ISLNK(n->st.st_mode) && chmod(out, n->st.st_mode & 07777) < 0)
		fl_err(f, "chmod", out);
	if (copy_xattrs(real, out, lu_ns(f->u), &f->lost_xattr) < 0)
		fl_err(f, "copy xattrs to", out);
	if (utimensat(AT_FDCWD, out, ts, AT_SYMLINK_NOFOLLOW) < 0)
		fl_err(f, "set times on", out);
}

int seen_link(struct fl *f, const struct lu_node *n, const char *out)
{
	for (size_t i = 0; i < f->nlinks; i++)
		if (f->links[i].dev == n->st.st_dev && f->links[i].ino == n->st.st_ino) {
			if (link(f->links[i].out, out) < 0)
				fl_err(f, "hard link", out);
			return 1;
		}
	if (f->nlinks == f->caplinks) {
		size_t nc = f->caplinks ? f->caplinks * 2 : 64;
		struct link *nl = realloc(f->links, nc * sizeof *nl);
		if (!nl)
			return 0;
		f->links = nl;
		f->caplinks = nc;
	}
	f->links[f->nlinks].dev = n->st.st_dev;
	f->links[f->nlinks].ino = n->st.st_ino;
	if ((f->links[f->nlinks].out = strdup(out)))
		f->nlinks++;
	return 0;
}

static void one(struct fl *f, const struct lu_node *n, const char *out, const char *rel);

static void walk(struct fl *f, const struct lu_node *dir, const char *out, const char *rel)
{
	struct lu_dir *d = lu_opendir_node(f->u, dir);
	const struct lu_dirent *e;
	char o[PATH_MAX], r[PATH_MAX];
	struct lu_node n;
	int rc;

	if (!d) {
		fl_err(f, "read directory", *rel ? rel : "/");
		return;
	}
	while ((e = lu_readdir(d))) {
		if ((rc = lu_lookup_child(f->u, dir, e->name, &n)) == -ENOENT)
			continue; /* an xattr whiteout that readdir may list */
		snprintf(o, sizeof o, "%s/%s", out, e->name);
		snprintf(r, sizeof r, "%s/%s", rel, e->name);
		if (rc < 0) {
			errno = -rc;
			fl_err(f, "look up", r);
			continue;
		}
		one(f, &n, o, r);
		lu_node_free(&n);
	}
	if (errno) {
		errno = errno == ESTALE ? ESTALE : errno;
		fl_err(f, "directory changed while reading", *rel ? rel : "/");
	}
	lu_closedir(d);
}

static void one(struct fl *f, const struct lu_node *n, const char *out, const char *rel)
{
	char real[PATH_MAX], target[PATH_MAX];
	mode_t m = n->st.st_mode;
	ssize_t len;

	if (lu_real_path(f->u, n->layer, n->rel, real, sizeof real) < 0) {
		errno = ENAMETOOLONG;
		fl_err(f, "path", rel);
		return;
	}
	if (f->pseudo) {
		pseudo_one(f, n, real, rel);
		if (S_ISDIR(m))
			walk(f, n, out, rel);
		return;
	}
	if (!S_ISDIR(m) && n->st.st_nlink > 1 && seen_link(f, n, out))
		return;
	if (S_ISDIR(m)) {
		if (*rel && mkdir(out, 0700) < 0) {
			fl_err(f, "mkdir", out);
			return;
		}
		walk(f, n, out, rel);
	} else if (S_ISREG(m)) {
		if (copy_file(f, n, out) < 0) {
			fl_err(f, "copy", out);
			return;
		}
	} else if (S_ISLNK(m)) {
		if ((len = readlink(real, target, sizeof target - 1)) < 0) {
			fl_err(f, "readlink", real);
			return;
		}
		target[len] = '\0';
		if (symlink(target, out) < 0) {
			fl_err(f, "symlink", out);
			return;
		}
	} else if (mknod(out, m, n->st.st_rdev) < 0) {
		if (errno == EPERM)
			f->lost_dev++;
		else
			fl_err(f, "mknod", out);
		return;
	}
	set_meta(f, n, real, out);
}

/* The command line: the union options into o, the layers (resolved and checked) into layers[*n], -o into *out.
 * -1 to go on; else the exit status: 0 after --help, 2 for a usage error, 1 for a layer refused (said; *n of
 * layers[] to free). */
static int flatten_args(int argc, char **argv, struct lu_opts *o, char **layers, int *n, const char **out)
{
	int store;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			*out = argv[++i];
		} else if (parse_union_opt(argv[i], o)) {
			continue;
		} else if (argv[i][0] == '-') {
			fputs(usage_text, stderr);
			return 2;
		} else if (*n < LU_MAX_LAYERS) {
			char d[PATH_MAX];
			char why[256];
			if (layer_resolve(argv[i], d, sizeof d, &store) < 0 || !(layers[*n] = strdup(d)))
				return 1;
			/* with store=1 only the filesystem check applies: FAT and friends
			 * cannot be an overlay layer at all */
			if (!layer_looks_like_upper(d, 1, why, sizeof why)) {
				fprintf(stderr, PROG " flatten: %s is not an overlay layer: %s\n", argv[i], why);
				(*n)++;
				return 1;
			}
			(*n)++;
		}
	}
	return -1;
}

int cmd_flatten(int argc, char **argv)
{
	struct lu_opts o = {0, 0};
	char *layers[LU_MAX_LAYERS], errbuf[512];
	const char *out = NULL;
	int n = 0, rc, squash;
	struct fl f = {0};
	struct lu_node root;
	struct stat rootst;

	if ((rc = flatten_args(argc, argv, &o, layers, &n, &out)) == 1)
		goto done;
	if (rc >= 0)
		return rc;
	rc = 1;
	if (!n || !out) {
		fputs(usage_text, stderr);
		return 2;
	}
	squash = strlen(out) > 9 && !strcmp(out + strlen(out) - 9, ".squashfs");
	f.root = geteuid() == 0;
	if (!(f.u = lu_open(layers, n, &o, errbuf, sizeof errbuf))) {
		fprintf(stderr, PROG " flatten: %s\n", errbuf);
		goto done;
	}
	if (squash) {
		if (squash_stage(&f, out) != 0)
			goto done;
	} else {
		snprintf(f.stage, sizeof f.stage, "%s", out);
		if (mkdir(f.stage, 0700) < 0) {
			fl_err(&f, "create output directory", f.stage);
			goto done;
		}
	}
	if ((rc = lu_lookup(f.u, "/", &root)) < 0) {
		errno = -rc;
		fl_err(&f, "root of", layers[0]);
		rc = 1;
		goto done;
	}
	if (!f.root && (lu_ns(f.u) & LU_NS_TRUSTED))
		fprintf(stderr, PROG " flatten: warning: not root, so trusted.overlay.* xattrs (opaque "
				     "directories, redirects) cannot be read; only stacks marked with user.overlay.* "
				     "(--userxattr) are merged exactly\n");
	one(&f, &root, f.stage, "");
	rootst = root.st;
	lu_node_free(&root);
	if (squash)
		squash_finish(&f, out, &rootst);
	if (f.lost_owner || f.lost_dev || f.lost_xattr)
		fprintf(stderr,
			PROG " flatten: not root: %d owners, %d device nodes, %d xattrs "
			     "could not be kept\n",
			f.lost_owner, f.lost_dev, f.lost_xattr);
	rc = (f.errors || f.lost_owner || f.lost_dev || f.lost_xattr) ? 1 : 0;
done:
	lu_close(f.u);
	for (int i = 0; i < n; i++)
		free(layers[i]);
	for (size_t i = 0; i < f.nlinks; i++)
		free(f.links[i].out);
	free(f.links);
	layers_cleanup();
	return rc;
}

/* cmd_flatten.c - `liveunion flatten LAYER... -o DIR|FILE.squashfs`. */
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

#include "tool.h"

struct link {
	dev_t dev;
	ino_t ino;
	char *out;
};

struct fl {
	struct lu_union *u;
	struct link *links;
	size_t nlinks, caplinks;
	int root, lost_owner, lost_xattr, lost_dev, errors;
	FILE *pseudo; /* non-root squashfs: owners and devices go here */
	const char *top;
};

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

static void err(struct fl *f, const char *what, const char *path)
{
	fprintf(stderr, PROG " flatten: %s %s: %s\n", what, path, strerror(errno));
	f->errors++;
}

static void pseudo_name(FILE *p, const char *rel)
{
	fputc('"', p);
	for (; *rel; rel++) {
		if (*rel == '"' || *rel == '\\')
			fputc('\\', p);
		fputc(*rel, p);
	}
	fputc('"', p);
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
			err(f, "chown", out);
		else
			f->lost_owner++;
	}
	if (!S_ISLNK(n->st.st_mode) && chmod(out, n->st.st_mode & 07777) < 0)
		err(f, "chmod", out);
	if (copy_xattrs(real, out, lu_ns(f->u), &f->lost_xattr) < 0)
		err(f, "copy xattrs to", out);
	if (utimensat(AT_FDCWD, out, ts, AT_SYMLINK_NOFOLLOW) < 0)
		err(f, "set times on", out);
}

static int seen_link(struct fl *f, const struct lu_node *n, const char *out)
{
	for (size_t i = 0; i < f->nlinks; i++)
		if (f->links[i].dev == n->st.st_dev && f->links[i].ino == n->st.st_ino) {
			if (link(f->links[i].out, out) < 0)
				err(f, "hard link", out);
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
static int seen_link(struct fl *f, const struct lu_node *n, const char *out);

static void walk(struct fl *f, const struct lu_node *dir, const char *out, const char *rel)
{
	struct lu_dir *d = lu_opendir_node(f->u, dir);
	const struct lu_dirent *e;
	char o[PATH_MAX], r[PATH_MAX];
	struct lu_node n;
	int rc;

	if (!d) {
		err(f, "read directory", *rel ? rel : "/");
		return;
	}
	while ((e = lu_readdir(d))) {
		if ((rc = lu_lookup_child(f->u, dir, e->name, &n)) == -ENOENT)
			continue; /* an xattr whiteout that readdir may list */
		snprintf(o, sizeof o, "%s/%s", out, e->name);
		snprintf(r, sizeof r, "%s/%s", rel, e->name);
		if (rc < 0) {
			errno = -rc;
			err(f, "look up", r);
			continue;
		}
		one(f, &n, o, r);
		lu_node_free(&n);
	}
	if (errno) {
		errno = errno == ESTALE ? ESTALE : errno;
		err(f, "directory changed while reading", *rel ? rel : "/");
	}
	lu_closedir(d);
}

static void shell_quote(FILE *p, const char *s)
{
	fputc('\'', p);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", p);
		else
			fputc(*s, p);
	fputc('\'', p);
}

/* Without root the whole tree is described to mksquashfs as pseudo definitions
 * (owners, devices, times), file contents come from `cat` of the layer file. */
static void pseudo_one(struct fl *f, const struct lu_node *n, const char *real, const char *rel)
{
	char target[PATH_MAX];
	mode_t m = n->st.st_mode;
	ssize_t len;
	const char *r = rel + 1;

	if (!*rel)
		return;
	if (strchr(rel, '\n')) {
		errno = EINVAL;
		err(f, "pseudo definitions cannot name (newline in name)", rel);
		return;
	}
	if (llistxattr(real, NULL, 0) > 0 && !S_ISLNK(m)) {
		char buf[4096];
		size_t pos = 0;
		const char *nm;
		ssize_t l = llistxattr(real, buf, sizeof buf);
		while (l > 0 && (nm = lu_xattr_list_next(buf, (size_t)l, &pos)))
			if (!lu_xattr_is_private(nm, strlen(nm), lu_ns(f->u))) {
				f->lost_xattr++;
				break;
			}
	}
	pseudo_name(f->pseudo, r);
	if (!S_ISDIR(m) && n->st.st_nlink > 1) {
		for (size_t i = 0; i < f->nlinks; i++)
			if (f->links[i].dev == n->st.st_dev && f->links[i].ino == n->st.st_ino) {
				fputs(" L ", f->pseudo);
				pseudo_name(f->pseudo, f->links[i].out);
				fputc('\n', f->pseudo);
				return;
			}
		seen_link(f, n, r);
	}
	fprintf(f->pseudo, " %c %lld %o %u %u",
		S_ISDIR(m) ? 'D' :
		S_ISREG(m) ? 'F' :
		S_ISLNK(m) ? 'S' :
		S_ISCHR(m) ? 'C' :
		S_ISBLK(m) ? 'B' :
			     'I',
		(long long)n->st.st_mtim.tv_sec, (unsigned)(m & 07777), (unsigned)n->st.st_uid, (unsigned)n->st.st_gid);
	if (S_ISREG(m)) {
		fputs(" cat ", f->pseudo);
		shell_quote(f->pseudo, real);
	} else if (S_ISLNK(m)) {
		if ((len = readlink(real, target, sizeof target - 1)) < 0) {
			err(f, "readlink", real);
			len = 0;
		}
		target[len] = '\0';
		fprintf(f->pseudo, " %s", target);
	} else if (S_ISCHR(m) || S_ISBLK(m)) {
		fprintf(f->pseudo, " %u %u", major(n->st.st_rdev), minor(n->st.st_rdev));
	} else if (!S_ISDIR(m)) {
		fputs(S_ISFIFO(m) ? " f" : " s", f->pseudo);
	}
	fputc('\n', f->pseudo);
}

static void one(struct fl *f, const struct lu_node *n, const char *out, const char *rel)
{
	char real[PATH_MAX], target[PATH_MAX];
	mode_t m = n->st.st_mode;
	ssize_t len;

	if (lu_real_path(f->u, n->layer, n->rel, real, sizeof real) < 0) {
		errno = ENAMETOOLONG;
		err(f, "path", rel);
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
			err(f, "mkdir", out);
			return;
		}
		walk(f, n, out, rel);
	} else if (S_ISREG(m)) {
		if (copy_file(f, n, out) < 0) {
			err(f, "copy", out);
			return;
		}
	} else if (S_ISLNK(m)) {
		if ((len = readlink(real, target, sizeof target - 1)) < 0) {
			err(f, "readlink", real);
			return;
		}
		target[len] = '\0';
		if (symlink(target, out) < 0) {
			err(f, "symlink", out);
			return;
		}
	} else if (mknod(out, m, n->st.st_rdev) < 0) {
		if (errno == EPERM)
			f->lost_dev++;
		else
			err(f, "mknod", out);
		return;
	}
	set_meta(f, n, real, out);
}

static int mksquashfs(const char *stage, const char *file, const char *pseudo, const struct stat *root)
{
	char uid[16], gid[16], mode[16], tm[24];
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		/* mksquashfs stamps SOURCE_DATE_EPOCH on every inode when it is set; flatten keeps
		 * the layers' times, so the variable only fixes the filesystem's own date. */
		const char *sde = getenv("SOURCE_DATE_EPOCH");
		char mkfs_time[24];
		snprintf(mkfs_time, sizeof mkfs_time, "%s", sde && *sde ? sde : "");
		if (unsetenv("SOURCE_DATE_EPOCH") < 0)
			_exit(127);
		snprintf(uid, sizeof uid, "%u", (unsigned)root->st_uid);
		snprintf(gid, sizeof gid, "%u", (unsigned)root->st_gid);
		snprintf(mode, sizeof mode, "%o", (unsigned)(root->st_mode & 07777));
		snprintf(tm, sizeof tm, "%lld", (long long)root->st_mtim.tv_sec);
		if (pseudo)
			execlp("mksquashfs", "mksquashfs", stage, file, "-noappend", "-no-progress", "-quiet", "-pf",
			       pseudo, "-root-uid", uid, "-root-gid", gid, "-root-mode", mode, "-root-time", tm,
			       *mkfs_time ? "-mkfs-time" : (char *)NULL, mkfs_time, (char *)NULL);
		else
			execlp("mksquashfs", "mksquashfs", stage, file, "-noappend", "-no-progress", "-quiet",
			       *mkfs_time ? "-mkfs-time" : (char *)NULL, mkfs_time, (char *)NULL);
		fprintf(stderr, PROG " flatten: mksquashfs: %s\n", strerror(errno));
		_exit(127);
	}
	return pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) ? -1 : 0;
}

int cmd_flatten(int argc, char **argv)
{
	struct lu_opts o = {0, 0};
	char *layers[LU_MAX_LAYERS], errbuf[512], stage[PATH_MAX], pseudo[PATH_MAX + 8];
	const char *out = NULL;
	int n = 0, store, rc = 1, squash;
	struct fl f = {0};
	struct lu_node root;
	struct stat rootst;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (parse_union_opt(argv[i], &o)) {
			continue;
		} else if (argv[i][0] == '-') {
			fputs(usage_text, stderr);
			return 2;
		} else if (n < LU_MAX_LAYERS) {
			char d[PATH_MAX];
			char why[256];
			if (layer_resolve(argv[i], d, sizeof d, &store) < 0 || !(layers[n] = strdup(d)))
				goto done;
			/* with store=1 only the filesystem check applies: FAT and friends
			 * cannot be an overlay layer at all */
			if (!layer_looks_like_upper(d, 1, why, sizeof why)) {
				fprintf(stderr, PROG " flatten: %s is not an overlay layer: %s\n", argv[i], why);
				n++;
				goto done;
			}
			n++;
		}
	}
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
		char *slash;
		snprintf(stage, sizeof stage, "%s", out);
		slash = strrchr(stage, '/');
		snprintf(slash ? slash + 1 : stage, sizeof stage - (size_t)(slash ? slash + 1 - stage : 0),
			 ".liveunion-flatten.XXXXXX");
		if (!mkdtemp(stage)) {
			err(&f, "staging directory", stage);
			goto done;
		}
		snprintf(pseudo, sizeof pseudo, "%s.pseudo", stage);
		if (!f.root && !(f.pseudo = fopen(pseudo, "w"))) {
			err(&f, "create", pseudo);
			goto done;
		}
	} else {
		snprintf(stage, sizeof stage, "%s", out);
		if (mkdir(stage, 0700) < 0) {
			err(&f, "create output directory", stage);
			goto done;
		}
	}
	if ((rc = lu_lookup(f.u, "/", &root)) < 0) {
		errno = -rc;
		err(&f, "root of", layers[0]);
		rc = 1;
		goto done;
	}
	if (!f.root && (lu_ns(f.u) & LU_NS_TRUSTED))
		fprintf(stderr, PROG " flatten: warning: not root, so trusted.overlay.* xattrs (opaque "
				     "directories, redirects) cannot be read; only stacks marked with user.overlay.* "
				     "(--userxattr) are merged exactly\n");
	one(&f, &root, stage, "");
	rootst = root.st;
	lu_node_free(&root);
	rc = 1;
	if (f.pseudo && fclose(f.pseudo) != 0)
		err(&f, "write", pseudo);
	if (squash && !f.errors && mksquashfs(stage, out, f.pseudo ? pseudo : NULL, &rootst) < 0) {
		fprintf(stderr, PROG " flatten: mksquashfs %s failed\n", out);
		f.errors++;
	}
	if (squash) {
		char *av[] = {"rm", "-rf", stage, NULL};
		pid_t pid = fork();
		if (pid == 0) {
			execvp(av[0], av);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		if (f.pseudo)
			unlink(pseudo);
	}
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

/* flatten_squashfs.c - `liveunion flatten ... -o FILE.squashfs`: a staging directory beside FILE; as root the
 * tree is written into it, without root it is described as pseudo definitions (owners, devices, times; contents
 * read from the layers); then mksquashfs. */
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
void pseudo_one(struct fl *f, const struct lu_node *n, const char *real, const char *rel)
{
	char target[PATH_MAX];
	mode_t m = n->st.st_mode;
	ssize_t len;
	const char *r = rel + 1;

	if (!*rel)
		return;
	if (strchr(rel, '\n')) {
		errno = EINVAL;
		fl_err(f, "pseudo definitions cannot name (newline in name)", rel);
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
			fl_err(f, "readlink", real);
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

int squash_stage(struct fl *f, const char *out)
{
	char *slash;

	snprintf(f->stage, sizeof f->stage, "%s", out);
	slash = strrchr(f->stage, '/');
	snprintf(slash ? slash + 1 : f->stage, sizeof f->stage - (size_t)(slash ? slash + 1 - f->stage : 0),
		 ".liveunion-flatten.XXXXXX");
	if (!mkdtemp(f->stage)) {
		fl_err(f, "staging directory", f->stage);
		return -1;
	}
	snprintf(f->pseudo_path, sizeof f->pseudo_path, "%s.pseudo", f->stage);
	if (!f->root && !(f->pseudo = fopen(f->pseudo_path, "w"))) {
		fl_err(f, "create", f->pseudo_path);
		return -1;
	}
	return 0;
}

void squash_finish(struct fl *f, const char *out, const struct stat *root)
{
	char *av[] = {"rm", "-rf", f->stage, NULL};
	pid_t pid;

	if (f->pseudo && fclose(f->pseudo) != 0)
		fl_err(f, "write", f->pseudo_path);
	if (!f->errors && mksquashfs(f->stage, out, f->pseudo ? f->pseudo_path : NULL, root) < 0) {
		fprintf(stderr, PROG " flatten: mksquashfs %s failed\n", out);
		f->errors++;
	}
	pid = fork();
	if (pid == 0) {
		execvp(av[0], av);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (f->pseudo)
		unlink(f->pseudo_path);
}

/* layers.c - layer arguments: directories, persistence stores, image files.
 *
 * Images are never written: as root they are loop-mounted read-only (ext4 with
 * noload, so no journal replay) in a private mount namespace of this process,
 * which the kernel tears down, with the loop devices, when we exit. Without
 * root a squashfs is unpacked with unsquashfs into a temporary directory
 * (ownership, device nodes and whiteouts are then lost: we say so). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "tool.h"

#define MAX_TMP 64
static char *tmpdirs[MAX_TMP];
static int tmp_mounted[MAX_TMP];
static int ntmp, private_ns;

static int run(char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, PROG ": %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static const char *image_type(const char *path)
{
	unsigned char b[1082];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, b, sizeof b, 0);

	if (fd >= 0)
		close(fd);
	if (n >= 4 && !memcmp(b, "hsqs", 4))
		return "squashfs";
	if (n >= 1082 && b[1080] == 0x53 && b[1081] == 0xef)
		return "ext4";
	return NULL;
}

static char *new_tmp(int mounted)
{
	char t[] = "/tmp/liveunion.XXXXXX";

	if (ntmp >= MAX_TMP || !mkdtemp(t))
		return NULL;
	tmp_mounted[ntmp] = mounted;
	return tmpdirs[ntmp++] = strdup(t);
}

static int is_store(const char *dir, char *up, size_t sz)
{
	struct stat a, b;
	char u[4096], w[4096];

	snprintf(u, sizeof u, "%s/" STORE_UPPER, dir);
	snprintf(w, sizeof w, "%s/" STORE_WORK, dir);
	if (stat(u, &a) < 0 || stat(w, &b) < 0 || !S_ISDIR(a.st_mode) || !S_ISDIR(b.st_mode))
		return 0;
	snprintf(up, sz, "%s", u);
	return 1;
}

int layer_resolve(const char *arg, char *dir, size_t sz, int *store)
{
	struct stat st;
	const char *type;
	char *t;

	*store = 0;
	if (stat(arg, &st) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", arg, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(dir, sz, "%s", arg);
	} else if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, PROG ": %s: not a directory or an image file\n", arg);
		return -1;
	} else if (!(type = image_type(arg))) {
		fprintf(stderr, PROG ": %s: neither squashfs nor ext4 (no superblock magic)\n", arg);
		return -1;
	} else if (geteuid() == 0) {
		if (!private_ns) {
			if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
				fprintf(stderr, PROG ": private mount namespace: %s\n", strerror(errno));
				return -1;
			}
			private_ns = 1;
		}
		if (!(t = new_tmp(1)))
			return -1;
		/* the arguments in the order mount reads them (clang-format would lay them out in columns) */
		/* clang-format off */
		char *argv[] = {"mount", "-t", (char *)type, "-o",
				!strcmp(type, "ext4") ? "loop,ro,noload" : "loop,ro", (char *)arg, t, NULL};
		/* clang-format on */
		if (run(argv) < 0) {
			fprintf(stderr, PROG ": cannot mount %s read-only at %s\n", arg, t);
			tmp_mounted[ntmp - 1] = 0;
			return -1;
		}
		snprintf(dir, sz, "%s", t);
	} else if (!strcmp(type, "squashfs")) {
		if (!(t = new_tmp(0)))
			return -1;
		char out[4200];
		snprintf(out, sizeof out, "%s/root", t);
		fprintf(stderr,
			PROG ": warning: not root, unpacking %s with unsquashfs: owners, device "
			     "nodes and whiteouts in it are lost; run as root for an exact view\n",
			arg);
		char *argv[] = {"unsquashfs", "-q", "-n", "-d", out, (char *)arg, NULL};
		if (run(argv) < 0) {
			fprintf(stderr, PROG ": unsquashfs %s failed\n", arg);
			return -1;
		}
		snprintf(dir, sz, "%s", out);
	} else {
		fprintf(stderr,
			PROG ": %s is an ext4 image; reading it needs root (it is then mounted "
			     "read-only in a private namespace), or mount it yourself: "
			     "mount -o loop,ro,noload %s DIR, and pass DIR\n",
			arg, arg);
		return -1;
	}
	if (is_store(dir, dir, sz))
		*store = 1;
	else if (!S_ISDIR(st.st_mode))
		*store = 2; /* an image of a bare tree: what is beside its mount point means nothing */
	return 0;
}

int layer_looks_like_upper(const char *dir, int store, char *why, size_t whysz)
{
	struct statfs fs;
	char w[4200], v[8];

	/* by the kernel's magic, and for FUSE drivers (exfat-fuse, ntfs-3g, fusefat) by what overlayfs needs: a
	 * file system that answers an xattr read with "not supported" cannot hold a whiteout or an opaque dir */
	if ((statfs(dir, &fs) == 0 && (fs.f_type == 0x4d44 || fs.f_type == 0x2011BAB0 || fs.f_type == 0x5346544e)) ||
	    (lgetxattr(dir, "trusted.overlay.opaque", v, sizeof v) < 0 && errno == ENOTSUP)) {
		snprintf(why, whysz,
			 "it is on FAT/exFAT/NTFS (or another file system without xattrs), which cannot "
			 "hold an overlay upper (no whiteouts, no xattrs)");
		return 0;
	}
	if (store == 1)
		return 1;
	snprintf(w, sizeof w, "%s/../" STORE_WORK, dir);
	if (store != 2 && access(w, F_OK) == 0)
		return 1;
	if (lgetxattr(dir, "trusted.overlay.origin", v, sizeof v) >= 0 ||
	    lgetxattr(dir, "trusted.overlay.opaque", v, sizeof v) >= 0 ||
	    lgetxattr(dir, "user.overlay.opaque", v, sizeof v) >= 0)
		return 1;
	snprintf(why, whysz,
		 store == 2 ? "an image with no upper/ and work/ inside it and no overlay "
			      "xattrs on its root; pass --assume-upper if it really is one" :
			      "no upper/ and work/ inside it, no work/ beside it, no overlay "
			      "xattrs on it; pass --assume-upper if it really is one");
	return 0;
}

void layers_cleanup(void)
{
	for (int i = ntmp - 1; i >= 0; i--) {
		if (tmp_mounted[i]) {
			if (umount2(tmpdirs[i], MNT_DETACH) < 0)
				fprintf(stderr, PROG ": umount %s: %s\n", tmpdirs[i], strerror(errno));
		} else {
			char *argv[] = {"rm", "-rf", tmpdirs[i], NULL};
			if (run(argv) < 0)
				fprintf(stderr, PROG ": could not remove %s\n", tmpdirs[i]);
			continue;
		}
		if (rmdir(tmpdirs[i]) < 0)
			fprintf(stderr, PROG ": rmdir %s: %s\n", tmpdirs[i], strerror(errno));
		free(tmpdirs[i]);
	}
	ntmp = 0;
}

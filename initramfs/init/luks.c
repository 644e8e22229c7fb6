/* The persistence store in a LUKS2 container. The init does not read key slots itself: cryptsetup (with libargon2
 * and OpenSSL, some 10 MB) is in the live root's base layer, which is mounted (and verified by dm-verity) before the
 * store is looked at, so the initramfs stays as small as it is. It runs in a private mount namespace chrooted into the
 * topmost layer that has it, with /dev, /proc, /sys and /run bound in; the passphrase goes to it through a pipe. */
#include "luks.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ask.h"
#include "disk.h"
#include "log.h"
#include "progress.h"
#include "util.h"

static const unsigned char luks_magic[6] = {'L', 'U', 'K', 'S', 0xba, 0xbe};

static void copy_field(char *dst, size_t dlen, const unsigned char *src, size_t slen)
{
	size_t i;

	for (i = 0; i < slen && i < dlen - 1 && src[i]; i++)
		dst[i] = (char)(src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?');
	dst[i] = '\0';
}

int luks_id_parse(const unsigned char *b, size_t len, struct luks_id *id)
{
	memset(id, 0, sizeof(*id));
	/* magic, version (big-endian 2), ..., label[48] at 24, ..., uuid[40] at 168 */
	if (len < 512 || memcmp(b, luks_magic, sizeof(luks_magic)) != 0 || b[6] != 0 || b[7] != 2)
		return -1;
	copy_field(id->label, sizeof(id->label), b + 24, 48);
	copy_field(id->uuid, sizeof(id->uuid), b + 168, 40);
	return 0;
}

int luks_read_id(const char *dev, struct luks_id *id)
{
	unsigned char b[512];
	ssize_t n;

	memset(id, 0, sizeof(*id));
	if ((n = disk_read_at(dev, b, sizeof(b), 0)) < 0)
		return -1;
	return luks_id_parse(b, (size_t)n, id) == 0 ? 1 : 0;
}

/* The topmost layer holding cryptsetup: its root in root, the program's path inside it in bin. */
static int find_cryptsetup(const struct boot *b, char *root, size_t rlen, const char **bin)
{
	static const char *const where[] = {"/usr/sbin/cryptsetup", "/sbin/cryptsetup"};
	char path[PATH_LEN * 2];
	struct stat st;
	int i;
	size_t w;

	for (i = b->nlayers - 1; i >= 0; i--)
		for (w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
			if (path_fmt(path, sizeof(path), "%s%s", b->layer[i].dir, where[w]) != 0) {
				fail_clear(); /* a layer whose mount point is that long holds no cryptsetup we can run */
				continue;
			}
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
				if (path_fmt(root, rlen, "%s", b->layer[i].dir) != 0)
					return -1;
				*bin = where[w];
				return 0;
			}
		}
	return -1;
}

/* cryptsetup ARGS... in the layer root, the secret (may be NULL) on its stdin: its exit status, or -1. */
static int cryptsetup(const char *root, const char *bin, const char *const args[], const char *secret)
{
	static const char *const binds[] = {"/dev", "/proc", "/sys", "/run"};
	static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DM_DISABLE_UDEV=1", NULL};
	const char *argv[16];
	int pfd[2], st, n = 0;
	pid_t pid;

	argv[n++] = "cryptsetup";
	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return fail(errno, "pipe for cryptsetup");
	pid = fork();
	if (pid < 0) {
		int e = errno;

		if (close(pfd[0]) != 0 || close(pfd[1]) != 0)
			msg("close the pipe to cryptsetup: %s", strerror(errno));
		return fail(e, "fork for cryptsetup");
	}
	if (pid == 0) {
		char dst[PATH_LEN * 2];
		size_t i;

		if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
			_exit(125);
		for (i = 0; i < sizeof(binds) / sizeof(binds[0]); i++) {
			text_fmt(dst, sizeof(dst), "%s%s", root, binds[i]);
			if (mount(binds[i], dst, NULL, MS_BIND | MS_REC, NULL) != 0)
				_exit(125);
		}
		if (chroot(root) != 0 || chdir("/") != 0 || dup2(pfd[0], 0) != 0)
			_exit(125);
		execve(bin, (char *const *)argv, envp);
		_exit(126);
	}
	if (close(pfd[0]) != 0)
		msg("close the pipe to cryptsetup: %s", strerror(errno));
	if (secret) {
		/* cryptsetup may exit without reading: a write error, not death. The disposition is put back after: an
		 * ignored signal stays ignored across execve, in the live root's init and everything it starts. */
		void (*old)(int) = signal(SIGPIPE, SIG_IGN);

		if (write_full(pfd[1], secret, strlen(secret)) != 0) {
			/* cryptsetup stopped reading: its exit status below says why */
		}
		if (old != SIG_ERR && signal(SIGPIPE, old) == SIG_ERR)
			msg("restore SIGPIPE after cryptsetup: %s", strerror(errno));
	}
	if (close(pfd[1]) != 0)
		msg("close the pipe to cryptsetup: %s", strerror(errno));
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return fail(errno, "wait for cryptsetup");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int luks_unlock(const struct plan *p, const struct boot *b, const char *dev, const char *what, bool ro, char *mapped,
		size_t mlen, char *why, size_t wlen)
{
	char root[PATH_LEN], prompt[PATH_LEN + 128], secret[512];
	const char *bin, *args[12];
	int tries, rc = -1, n, a;
	double t0;

	if (find_cryptsetup(b, root, sizeof(root), &bin) != 0)
		return text_err(why, wlen, "%s is encrypted (LUKS2), and no layer of the live root has cryptsetup",
				what);
	text_fmt(prompt, sizeof(prompt), "\nPassphrase for the persistence store %s: ", what);
	for (tries = 1; tries <= LUKS_TRIES; tries++) {
		n = ask_secret(prompt, p->persist_timeout, secret, sizeof(secret));
		if (n < 0) {
			rc = errno == ETIMEDOUT ?
				     text_err(why, wlen, "no passphrase given within live.persist.timeout=%u s",
					      p->persist_timeout) :
				     text_err(why, wlen, "no console to ask for the passphrase on");
			break;
		}
		if (n == 0) { /* an Enter by mistake: a try, but nothing for cryptsetup, which refuses empty input */
			msg("persistence: empty passphrase for %s (%d of %d tries)", what, tries, LUKS_TRIES);
			rc = text_err(why, wlen, "%d wrong passphrases for %s", LUKS_TRIES, what);
			continue;
		}
		a = 0;
		args[a++] = "open";
		args[a++] = "--type=luks2";
		args[a++] = "--key-file=-";
		args[a++] = "--disable-keyring";
		args[a++] = "--disable-locks";
		args[a++] = "--disable-external-tokens";
		if (ro)
			args[a++] = "--readonly";
		args[a++] = dev;
		args[a++] = LUKS_MAPPED;
		args[a] = NULL;
		t0 = progress_now();
		rc = cryptsetup(root, bin, args, secret);
		memset(secret, 0, sizeof(secret));
		if (rc == 0) {
			msg("persistence: %s unlocked in %.1f s (cryptsetup of %s)", what, progress_now() - t0, root);
			text_fmt(mapped, mlen, "/dev/mapper/" LUKS_MAPPED);
			return 0;
		}
		if (rc != 2) { /* 2: no key slot opens with it; anything else will not get better with another try */
			text_err(why, wlen, "cryptsetup open %s failed (exit %d%s)", dev, rc,
				 rc == 125 ? ": could not set up its root" :
				 rc == 126 ? ": could not run it" :
					     "");
			rc = -1;
			break;
		}
		msg("persistence: wrong passphrase for %s (%d of %d tries)", what, tries, LUKS_TRIES);
		rc = text_err(why, wlen, "%d wrong passphrases for %s", LUKS_TRIES, what);
	}
	memset(secret, 0, sizeof(secret));
	return rc;
}

void luks_close(const struct boot *b)
{
	const char *const args[] = {"close", LUKS_MAPPED, NULL};
	char root[PATH_LEN];
	const char *bin;
	int rc;

	if (find_cryptsetup(b, root, sizeof(root), &bin) != 0)
		return;
	if ((rc = cryptsetup(root, bin, args, NULL)) != 0)
		msg("persistence: cryptsetup close " LUKS_MAPPED ": exit %d", rc);
}

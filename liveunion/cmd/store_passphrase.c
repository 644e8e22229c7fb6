/* store_passphrase.c - `liveunion store passphrase`: change the LUKS2 passphrase of the store's container, or add
 * a recovery key (cryptsetup does the work). */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

/* A recovery key: 32 random bytes as 8 groups of 8 characters of an alphabet without look-alikes. */
static int recovery_key(char *out, size_t len)
{
	static const char abc[] = "abcdefghjkmnpqrstuvwxyz23456789"; /* 31 letters: no i, l, o, 0, 1 */
	unsigned char raw[64];
	size_t o = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw) {
		fprintf(stderr, PROG " store passphrase: reading /dev/urandom: %s\n", strerror(errno ? errno : EIO));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	for (size_t i = 0, g = 0; i < sizeof raw && o + 2 < len && g < 64; i++) {
		if (raw[i] >= 31 * 8) /* uniform: only bytes below a multiple of 31 */
			continue;
		if (g && g % 8 == 0)
			out[o++] = '-';
		out[o++] = abc[raw[i] % 31];
		g++;
		if (g == 48)
			break;
	}
	out[o] = '\0';
	if (o < 48 + 5) { /* few bytes usable: draw again */
		return recovery_key(out, len);
	}
	return 0;
}

/* The key slot cost of ./build.sh usb (iso/mkusb.sh LUKS_KDF_*): fixed, not measured here, so a slot made on a
 * fast machine still opens on a small one within its memory. */
#define KDF_ARGS \
	"--pbkdf", "argon2id", "--pbkdf-memory", "65536", "--pbkdf-force-iterations", "4", "--pbkdf-parallel", "1"

/* cryptsetup luksChangeKey on dev: the current passphrase from key_file or asked, the new one from new_key_file
 * or asked. 0, or 1 said. */
static int change_key(const char *dev, const char *key_file, const char *new_key_file)
{
	const char *cmd[24] = {"cryptsetup", "luksChangeKey", KDF_ARGS};
	int n = 10, r;

	if (key_file) {
		cmd[n++] = "--key-file";
		cmd[n++] = key_file;
	}
	cmd[n++] = dev;
	if (new_key_file)
		cmd[n++] = new_key_file;
	cmd[n] = NULL;
	printf("passphrase: changing the passphrase of %s (LUKS2) with cryptsetup luksChangeKey\n", dev);
	r = store_run(cmd, -1);
	if (r != 0) {
		fprintf(stderr,
			PROG " store passphrase: cryptsetup luksChangeKey %s failed (exit %d): the passphrase "
			     "is unchanged\n",
			dev, r);
		return 1;
	}
	printf("passphrase: changed; the old one no longer opens %s\n", dev);
	return 0;
}

/* A recovery key made, added to dev in a key slot of its own (cryptsetup luksAddKey; the current passphrase from
 * key_file or asked) and printed once. 0, or 1 said. */
static int add_recovery_key(const char *dev, const char *key_file)
{
	/* the new key reaches cryptsetup through a pipe, by its /proc/self/fd name: never in a file, never on argv */
	char key[80], newkey[32];
	const char *cmd[24] = {"cryptsetup", "luksAddKey", KDF_ARGS};
	int n = 10, r, p[2];
	size_t kl;

	if (recovery_key(key, sizeof key) != 0)
		return 1;
	if (pipe(p) != 0) {
		fprintf(stderr, PROG " store passphrase: pipe: %s\n", strerror(errno));
		return 1;
	}
	kl = strlen(key);
	if (write(p[1], key, kl) != (ssize_t)kl || close(p[1]) != 0) {
		fprintf(stderr, PROG " store passphrase: pipe: %s\n", strerror(errno));
		close(p[0]);
		return 1;
	}
	pfmt(newkey, sizeof newkey, "/proc/self/fd/%d", p[0]); /* a live root may lack /dev/fd */
	if (key_file) {
		cmd[n++] = "--key-file";
		cmd[n++] = key_file;
	}
	cmd[n++] = dev;
	cmd[n++] = newkey;
	cmd[n] = NULL;
	printf("passphrase: adding a recovery key to %s (LUKS2) with cryptsetup luksAddKey; "
	       "the current passphrase opens the way\n",
	       dev);
	r = store_run(cmd, -1);
	close(p[0]);
	if (r != 0) {
		memset(key, 0, sizeof key);
		fprintf(stderr, PROG " store passphrase: cryptsetup luksAddKey %s failed (exit %d): no key was added\n",
			dev, r);
		return 1;
	}
	printf("recovery key: %s\n"
	       "Write it down and keep it away from the stick: typed at the boot prompt (with the dashes), it opens "
	       "the store as the passphrase does. It is not stored anywhere else.\n",
	       key);
	memset(key, 0, sizeof key);
	return 0;
}

int store_passphrase(int argc, char **argv)
{
	static const char *const opts[] = {"--recovery-key", "--key-file=", "--new-key-file=", NULL};
	const char *vals[3] = {NULL, NULL, NULL}, *dir, *pos[1];
	char dev[STORE_NAME_LEN + 8];
	struct store_info st;
	int r = store_args("passphrase", argc, argv, opts, vals, &dir, pos, 0);

	if (r) {
		printf("usage: " PROG
		       " store passphrase [--recovery-key] [--key-file F] [--new-key-file F] [--store DIR]\n"
		       "Change the passphrase of the encrypted (LUKS2) store, asked on the terminal by cryptsetup\n"
		       "(--key-file: the current one from a file, --new-key-file: the new one), or with\n"
		       "--recovery-key add a new random key in a key slot of its own and print it once.\n");
		return r == 3 ? 0 : 2;
	}
	if (store_find(PROG " store passphrase", dir, &st) != 0)
		return 1;
	if (!st.luks) {
		char fmt[PATH_MAX + 300];

		store_format_text(&st, fmt, sizeof fmt);
		fprintf(stderr,
			PROG " store passphrase: the store is not encrypted (%s): it has no passphrase. "
			     "An encrypted stick is made with './build.sh usb --encrypt'.\n",
			fmt);
		return 1;
	}
	if (vals[0] && vals[2]) {
		fprintf(stderr, PROG " store passphrase: --recovery-key makes its own key: --new-key-file is not used "
				     "with it\n");
		return 2;
	}
	pfmt(dev, sizeof dev, "/dev/%s", st.under);
	return vals[0] ? add_recovery_key(dev, vals[1]) : change_key(dev, vals[1], vals[2]);
}

/* cmd_update.c - `liveunion update`: the boot choice of an A/B stick (./build.sh usb --slots) from the running
 * system. The stick's GRUB keeps it in liveunion/grubenv beside the slots a.iso and b.iso (iso/slots.cfg): slot=,
 * tries= (a slot on trial: boots left before GRUB falls back) and failed= (a slot that used its tries). The FAT
 * holding them is mounted read-only by the init (and a store may be used in place on it), so the block is read and
 * written on the partition itself, at the sectors the file system's block map gives: where GRUB's save_env writes.
 * Double-buffered: grubenv.bak beside it gets the whole new state first, then grubenv; a grubenv torn by a power cut
 * (no header, or no slot=a|b) is read from grubenv.bak, as the menu does. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "tool.h"

#define ENV_BYTES 1024
#define ENV_HEADER "# GRUB Environment Block\n"
#define ISO_HOST LIVE_RUN "/iso-host" /* the init's mount of the partition holding the ISO file */

struct grubenv {
	char slot[8], tries[8], failed[8];
	char other[ENV_BYTES]; /* NAME=VALUE lines of anyone else, kept */
};

/* Where the block lives: the file (on a read-only mount) and, in the live system, the partition under it. */
struct envloc {
	char file[4096], dev[256];
	int devfd, filefd, bsz;
	long blocks[ENV_BYTES / 512];
};

static int say_err(const char *what, const char *why)
{
	fprintf(stderr, PROG " update: %s: %s\n", what, why);
	return 1;
}

/* plan_get PLAN KEY OUT LEN: the value of KEY in the plan; 0, or -1 when absent or unreadable. */
static int plan_get(const char *plan, const char *key, char *out, size_t len)
{
	char line[4096];
	size_t k = strlen(key);
	FILE *f = fopen(plan, "r");
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, k) && line[k] == '=') {
			line[strcspn(line, "\n")] = '\0';
			rc = snprintf(out, len, "%s", line + k + 1) < (int)len ? 0 : -1;
		}
	fclose(f);
	return rc;
}

/* env_parse BUF E: the values of a block (BUF, ENV_BYTES bytes, untrusted). -1 when a line holds a backslash: GRUB
 * escapes '\\' and a newline in a value that way, and no writer of a stick's block puts one there, so such a block
 * is refused rather than read wrong (and written back changed). */
static int env_parse(const char *buf, struct grubenv *e)
{
	char copy[ENV_BYTES + 1], *line, *save = NULL;
	size_t used = 0;

	memset(e, 0, sizeof *e);
	memcpy(copy, buf, ENV_BYTES);
	copy[ENV_BYTES] = '\0';
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		if (strchr(line, '\\'))
			return -1;
		if (!strncmp(line, "slot=", 5))
			snprintf(e->slot, sizeof e->slot, "%s", line + 5);
		else if (!strncmp(line, "tries=", 6))
			snprintf(e->tries, sizeof e->tries, "%s", line + 6);
		else if (!strncmp(line, "failed=", 7))
			snprintf(e->failed, sizeof e->failed, "%s", line + 7);
		else if (strchr(line, '=') && used + strlen(line) + 2 < sizeof e->other)
			used += (size_t)sprintf(e->other + used, "%s\n", line);
	}
	if (strcmp(e->slot, "b") != 0)
		strcpy(e->slot, "a"); /* as the menu reads it */
	return 0;
}

/* A block the menu takes: the header, and slot=a or slot=b (a torn one has neither or not both). */
static int env_whole(const char *buf)
{
	const char *p = buf + strlen(ENV_HEADER), *end = buf + ENV_BYTES;

	if (memcmp(buf, ENV_HEADER, strlen(ENV_HEADER)) != 0)
		return 0;
	while (p + 7 <= end) { /* "slot=a\n" at a line's start */
		if (!memcmp(p, "slot=", 5) && (p[5] == 'a' || p[5] == 'b') && p[6] == '\n')
			return 1;
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p)
			return 0;
		p++;
	}
	return 0;
}

/* The values of tries= the menu counts down (any other it takes as 0). */
static int tries_known(const char *t)
{
	return !t[0] || ((t[0] >= '0' && t[0] <= '3') && !t[1]);
}

/* The block as GRUB reads it: the header, our three values first (in the first sector), '#' up to 1024 bytes. */
static int env_format(const struct grubenv *e, char *buf)
{
	int n = snprintf(buf, ENV_BYTES + 1, ENV_HEADER "slot=%s\ntries=%s\nfailed=%s\n%s", e->slot, e->tries,
			 e->failed, e->other);

	if (n < 0 || n > ENV_BYTES)
		return -1;
	memset(buf + n, '#', ENV_BYTES - (size_t)n);
	return 0;
}

/* Opens the block: with a device, its blocks are mapped (FIBMAP) and read from the device. */
static int env_open(struct envloc *l, char *buf)
{
	struct stat st;

	if ((l->filefd = open(l->file, O_RDONLY | O_CLOEXEC)) < 0 || fstat(l->filefd, &st) != 0)
		return say_err(l->file, strerror(errno));
	if (st.st_size != ENV_BYTES)
		return say_err(l->file, "not a 1024-byte GRUB environment block");
	if (!l->dev[0]) {
		close(l->filefd);
		if ((l->filefd = open(l->file, O_RDWR | O_CLOEXEC)) < 0)
			return say_err(l->file, strerror(errno));
		if (pread(l->filefd, buf, ENV_BYTES, 0) != ENV_BYTES)
			return say_err(l->file, "cannot read it");
	} else {
		if (ioctl(l->filefd, FIGETBSZ, &l->bsz) != 0 || l->bsz <= 0 || l->bsz > ENV_BYTES ||
		    ENV_BYTES % l->bsz != 0)
			return say_err(l->file, "no block size from its file system (FIGETBSZ)");
		if ((l->devfd = open(l->dev, O_RDWR | O_CLOEXEC)) < 0)
			return say_err(l->dev, strerror(errno));
		for (int i = 0; i < ENV_BYTES / l->bsz; i++) {
			int v = i;
			if (ioctl(l->filefd, FIBMAP, &v) != 0 || v <= 0)
				return say_err(l->file, "no block map from its file system (FIBMAP)");
			l->blocks[i] = v;
			if (pread(l->devfd, buf + i * l->bsz, (size_t)l->bsz, (off_t)v * l->bsz) != l->bsz)
				return say_err(l->dev, "cannot read the block of grubenv");
		}
	}
	return 0;
}

static void env_close(struct envloc *l)
{
	if (l->devfd >= 0)
		close(l->devfd);
	if (l->filefd >= 0)
		close(l->filefd);
	l->devfd = l->filefd = -1;
}

/* Writes the block where it lies and syncs it. */
static int env_write(struct envloc *l, const struct grubenv *e)
{
	char buf[ENV_BYTES + 1];

	if (env_format(e, buf) != 0)
		return say_err(l->file, "the values do not fit in 1024 bytes");
	if (!l->dev[0]) {
		if (pwrite(l->filefd, buf, ENV_BYTES, 0) != ENV_BYTES || fsync(l->filefd) != 0)
			return say_err(l->file, strerror(errno));
		return 0;
	}
	for (int i = 0; i < ENV_BYTES / l->bsz; i++)
		if (pwrite(l->devfd, buf + i * l->bsz, (size_t)l->bsz, (off_t)l->blocks[i] * l->bsz) != l->bsz)
			return say_err(l->dev, strerror(errno));
	if (fsync(l->devfd) != 0)
		return say_err(l->dev, strerror(errno));
	return 0;
}

static const char *usage_text =
	"usage: " PROG " update [--status | --good [--boot] | --rollback] [--plan FILE | --env FILE]\n"
	"The boot choice of an A/B stick (made by ./build.sh usb): which slot boots, whether it is on trial.\n"
	"  --status    the slot that booted, its state, a rollback GRUB made (default)\n"
	"  --good      this boot is healthy: the slot on trial is kept (its tries end)\n"
	"  --boot      with --good, as the live system's start-up runs it: quiet when not booted from an A/B stick\n"
	"  --rollback  the other slot boots from now on\n"
	"  --plan FILE the plan to read (default " LIVE_RUN "/" LIVE_PLAN ")\n"
	"  --env FILE  work on this grubenv file itself (a stick's, on the host)\n";

/* What one run of liveunion update works on: the block and its copy, and the slot this system booted from. */
struct update {
	const char *plan, *envfile, *act;
	int boot, bak;
	char buf[ENV_BYTES + 1], bakbuf[ENV_BYTES + 1], booted[8];
	struct envloc l, b;
	struct grubenv e;
};

/* The options into u: 0, or the exit status to return now (usage printed). */
static int update_args(struct update *u, int argc, char **argv, int *status)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--status") || !strcmp(argv[i], "--good") || !strcmp(argv[i], "--rollback"))
			u->act = argv[i];
		else if (!strcmp(argv[i], "--boot"))
			u->boot = 1;
		else if (!strcmp(argv[i], "--plan") && i + 1 < argc)
			u->plan = argv[++i];
		else if (!strcmp(argv[i], "--env") && i + 1 < argc)
			u->envfile = argv[++i];
		else {
			fputs(usage_text, strcmp(argv[i], "--help") ? stderr : stdout);
			*status = strcmp(argv[i], "--help") ? 2 : 0;
			return -1;
		}
	}
	return 0;
}

/* Where the block is: --env FILE, or grubenv beside the slot (a.iso or b.iso) the plan says this system booted
 * from. 0; 1 when this is no A/B stick and --boot asks for silence; else say_err's status. */
static int update_locate(struct update *u, int *status)
{
	char iso[4096];
	const char *base, *slash;

	if (u->envfile) {
		snprintf(u->l.file, sizeof u->l.file, "%s", u->envfile);
		return 0;
	}
	if (plan_get(u->plan, "medium.iso", iso, sizeof iso) != 0 || !iso[0] ||
	    plan_get(u->plan, "medium.iso.host", u->l.dev, sizeof u->l.dev) != 0 || !u->l.dev[0]) {
		*status = u->boot ? 0 :
				    say_err(u->plan, "not booted from an ISO file (no medium.iso): not an A/B stick");
		return -1;
	}
	slash = strrchr(iso, '/');
	base = slash ? slash + 1 : iso;
	if (strcmp(base, "a.iso") != 0 && strcmp(base, "b.iso") != 0) {
		*status = u->boot ? 0 : say_err(iso, "not a slot of an A/B stick (a.iso or b.iso)");
		return -1;
	}
	u->booted[0] = base[0];
	if (snprintf(u->l.file, sizeof u->l.file, ISO_HOST "%.*s/grubenv", (int)(base - iso), iso) >=
	    (int)sizeof u->l.file) {
		*status = say_err(iso, "path too long");
		return -1;
	}
	return 0;
}

/* The block read (grubenv, or grubenv.bak where grubenv is torn) and parsed into u->e: 0, or the exit status. */
static int update_load(struct update *u)
{
	if (env_open(&u->l, u->buf) != 0)
		return 1;
	/* grubenv.bak, where the stick has one (made before it existed: grubenv alone) */
	if (snprintf(u->b.file, sizeof u->b.file, "%s.bak", u->l.file) >= (int)sizeof u->b.file)
		return say_err(u->l.file, "path too long");
	memcpy(u->b.dev, u->l.dev, sizeof u->b.dev);
	if (access(u->b.file, F_OK) == 0) {
		if (env_open(&u->b, u->bakbuf) != 0)
			return 1;
		u->bak = 1;
	}
	if (!env_whole(u->buf)) {
		if (u->bak && !memcmp(u->bakbuf, ENV_HEADER, strlen(ENV_HEADER))) {
			fprintf(stderr, PROG " update: %s: not a whole environment block (torn?): read %s\n", u->l.file,
				u->b.file);
			memcpy(u->buf, u->bakbuf, ENV_BYTES);
		} else if (memcmp(u->buf, ENV_HEADER, strlen(ENV_HEADER)) != 0) {
			return say_err(u->l.file, "not a GRUB environment block (no header)");
		}
	}
	if (env_parse(u->buf, &u->e) != 0)
		return say_err(u->l.file, "a value holds a backslash escape, which no writer of a stick's block puts "
					  "there: refusing to read or rewrite it");
	return 0;
}

/* The new state into grubenv.bak first (where there is one), then grubenv. */
static int update_write(struct update *u)
{
	return (u->bak ? env_write(&u->b, &u->e) : 0) || env_write(&u->l, &u->e);
}

static void update_status(const struct update *u)
{
	const struct grubenv *e = &u->e;

	printf("slot %s boots%s", e->slot, u->booted[0] ? "" : "\n");
	if (u->booted[0])
		printf(" (this system is slot %s)\n", u->booted);
	if (!tries_known(e->tries))
		printf("slot %s: tries=%s is not 0-3: the menu takes it as 0 and boots slot %s next\n", e->slot,
		       e->tries, e->slot[0] == 'a' ? "b" : "a");
	else if (e->tries[0])
		printf("slot %s is on trial: %s boot(s) left before slot %s boots again\n", e->slot, e->tries,
		       e->slot[0] == 'a' ? "b" : "a");
	else
		printf("slot %s is good\n", e->slot);
	if (e->failed[0])
		printf("rolled back: slot %s did not come up healthy in its tries\n", e->failed);
}

/* --good: the slot on trial that this system is kept (its tries cleared). */
static int update_good(struct update *u)
{
	struct grubenv *e = &u->e;
	int rc = 0;

	if (u->booted[0] && strcmp(u->booted, e->slot) != 0)
		return say_err(u->l.file, "this system is not the slot that boots next: nothing marked");
	if (e->failed[0] && u->boot) {
		printf("liveunion: slot %s booted after slot %s did not come up healthy in its tries: rolled back\n",
		       e->slot, e->failed);
	} else if (!tries_known(e->tries)) {
		rc = say_err(u->l.file, "tries= is not 0-3: the stick's menu takes it as 0 and boots the other slot "
					"next; nothing marked");
	} else if (!e->tries[0]) {
		if (!u->boot)
			printf("slot %s is good already\n", e->slot);
	} else {
		e->tries[0] = '\0';
		if ((rc = update_write(u)) == 0)
			printf("liveunion: slot %s came up healthy: kept (slot %s stays the way back)\n", e->slot,
			       e->slot[0] == 'a' ? "b" : "a");
	}
	return rc;
}

/* --rollback: the other slot boots from now on; a slot left while on trial is recorded as failed. */
static int update_rollback(struct update *u)
{
	struct grubenv *e = &u->e;
	char other[8];
	int rc;

	snprintf(other, sizeof other, "%s", e->slot[0] == 'a' ? "b" : "a");
	if (e->tries[0])
		snprintf(e->failed, sizeof e->failed, "%s", e->slot);
	else
		e->failed[0] = '\0';
	snprintf(e->slot, sizeof e->slot, "%s", other);
	e->tries[0] = '\0';
	if ((rc = update_write(u)) == 0)
		printf("slot %s boots from now on\n", e->slot);
	return rc;
}

int cmd_update(int argc, char **argv)
{
	static struct update u;
	int rc = 0;

	memset(&u, 0, sizeof u);
	u.plan = LIVE_RUN "/" LIVE_PLAN;
	u.act = "--status";
	u.l.devfd = u.l.filefd = u.b.devfd = u.b.filefd = -1;
	if (update_args(&u, argc, argv, &rc) != 0 || update_locate(&u, &rc) != 0)
		return rc;
	rc = update_load(&u);
	if (rc == 0 && !strcmp(u.act, "--status"))
		update_status(&u);
	else if (rc == 0 && !strcmp(u.act, "--good"))
		rc = update_good(&u);
	else if (rc == 0)
		rc = update_rollback(&u);
	env_close(&u.l);
	env_close(&u.b);
	return rc;
}

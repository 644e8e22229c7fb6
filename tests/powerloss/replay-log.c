/* replay-log.c - reads a write log in the dm-log-writes format (as qemu's blklogwrites driver writes it) and
 * replays it onto copies of the disk image the log started from, to make the disk a power cut could have left
 * (tests/qemu/persist-powerloss.sh, tests/unit/replay-log.sh). Written for the liveunion tests from the format's
 * description; C11, every return value checked.
 *
 * The log: sector 0 is the super block (le64 magic 0x6a736677736872, le64 version 1, le64 number of entries,
 * le32 sector size; the rest of the sector is zero). Entries follow from sector 1, each one header sector
 * (le64 sector, le64 nr_sectors, le64 flags, le64 data_len) and then, unless it is a discard, nr_sectors sectors of
 * data. Sectors and sizes are in units of the log's sector size. Flags: FLUSH 1 (every earlier write is on the
 * medium), FUA 2 (this write is), DISCARD 4, MARK 8 (a named point: data_len bytes of name after the header in its
 * sector), METADATA 16.
 *
 *   replay-log list LOG                       the super block, every entry and the flush/FUA points
 *   replay-log count LOG                      the number of entries the super block records
 *   replay-log points LOG                     the index of every FLUSH or FUA entry, one a line
 *   replay-log replay LOG ORIG OUT N          OUT = ORIG with entries 0..N-1 applied (N = 0: a plain copy)
 *   replay-log apply LOG OUT FROM N           entries FROM..N-1 applied onto OUT as it is (incremental replay)
 *   replay-log random LOG ORIG OUT F SEED [tear]
 *                                             OUT = ORIG with entries 0..F applied (F is a FLUSH entry), then of the
 *                                             writes after F up to the next FLUSH entry (or the end) a subset drawn
 *                                             from SEED; a FUA write is always kept (it was on the medium when it
 *                                             completed), the others are kept or dropped, half and half. The
 *                                             kept and dropped entries are printed. With tear, the power went
 *                                             while the last kept write of more than one sector was under way:
 *                                             only its first N sectors are applied (a drive writes the sectors of
 *                                             one command in order: a prefix, never a suffix or holes), N from 1 to
 *                                             its size less one, drawn from SEED after the keep-or-drop draw (which
 *                                             stays that of the same SEED without tear); printed as "torn".
 *   replay-log subset LOG OUT FROM END SEED [tear]
 *                                             the same draw over entries FROM..END-1, applied onto OUT as it is
 *
 * A log is refused with a message naming what is wrong (wrong magic or version, a bad sector size, unknown flags,
 * an entry cut short by the end of the file, a write beyond the end of the image) before anything is written.
 * Exit status: 0 done, 1 a refused log or a failed read or write, 2 a wrong command line. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../iso/full_io.h"

#define RL_MAGIC 0x6a736677736872ULL
#define RL_VERSION 1ULL
#define RL_FLUSH 1ULL
#define RL_FUA 2ULL
#define RL_DISCARD 4ULL
#define RL_MARK 8ULL
#define RL_METADATA 16ULL
#define RL_KNOWN (RL_FLUSH | RL_FUA | RL_DISCARD | RL_MARK | RL_METADATA)
#define RL_HDR 32 /* the bytes of an entry header that carry something */
#define RL_SUPER 28
#define RL_MIN_SECTOR 512
#define RL_MAX_SECTOR (1U << 20)

struct rl_entry {
	uint64_t sector, nr_sectors, flags, data_len;
	uint64_t data_off; /* byte offset of the data in the log */
	char mark[64];     /* a MARK entry's name, cut to fit */
};

struct rl_log {
	const char *name;
	int fd;
	uint64_t size; /* bytes in the log file */
	uint64_t version, nr_entries, end;
	uint32_t sectorsize;
	struct rl_entry *e;
};

static char rl_err[512];

static int rl_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vsnprintf(rl_err, sizeof(rl_err), fmt, ap) < 0)
		rl_err[0] = '\0';
	va_end(ap);
	return -1;
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static const char *flag_names(uint64_t f, char *buf, size_t len)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {{RL_FLUSH, "FLUSH"},
		     {RL_FUA, "FUA"},
		     {RL_DISCARD, "DISCARD"},
		     {RL_MARK, "MARK"},
		     {RL_METADATA, "METADATA"}};
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int n;

		if (!(f & names[i].bit))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", names[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!used && len > 1)
		snprintf(buf, len, "-");
	return buf;
}

/* rl_parse: the super block and every entry it counts, each checked against the file's size. The log's fd and
 * size are in log; on a refusal rl_err says why and nothing is allocated. */
static int rl_parse(struct rl_log *log)
{
	unsigned char sb[RL_SUPER], *hdr;
	uint64_t magic, off, i, max_entries;
	uint32_t ss;

	log->e = NULL;
	if (log->size < RL_SUPER)
		return rl_fail("%s: %" PRIu64 " bytes: too short for a log super block (%d bytes)", log->name,
			       log->size, RL_SUPER);
	if (full_pread(log->fd, sb, sizeof(sb), 0) != 0)
		return rl_fail("%s: cannot read the super block: %s", log->name,
			       errno ? strerror(errno) : "end of file");
	magic = le64(sb);
	log->version = le64(sb + 8);
	log->nr_entries = le64(sb + 16);
	ss = le32(sb + 24);
	if (magic != RL_MAGIC)
		return rl_fail("%s: wrong magic 0x%" PRIx64 " (a dm-log-writes log has 0x%llx)", log->name, magic,
			       (unsigned long long)RL_MAGIC);
	if (log->version != RL_VERSION)
		return rl_fail("%s: log version %" PRIu64 ", this tool reads version %llu", log->name, log->version,
			       (unsigned long long)RL_VERSION);
	if (ss < RL_MIN_SECTOR || ss > RL_MAX_SECTOR || (ss & (ss - 1)) != 0)
		return rl_fail("%s: sector size %" PRIu32 " is not a power of two from %d to %u", log->name, ss,
			       RL_MIN_SECTOR, RL_MAX_SECTOR);
	log->sectorsize = ss;
	if (log->size < ss)
		return rl_fail("%s: truncated: %" PRIu64 " bytes, less than the super block's sector (%" PRIu32
			       " bytes)",
			       log->name, log->size, ss);
	/* every entry takes at least one sector after the super block's */
	max_entries = log->size / ss;
	if (log->nr_entries > max_entries)
		return rl_fail("%s: truncated: the super block counts %" PRIu64 " entries, the file (%" PRIu64
			       " bytes) holds at most %" PRIu64,
			       log->name, log->nr_entries, log->size, max_entries > 0 ? max_entries - 1 : 0);
	log->e = calloc(log->nr_entries ? log->nr_entries : 1, sizeof(*log->e));
	hdr = malloc(ss);
	if (!log->e || !hdr) {
		free(log->e);
		free(hdr);
		log->e = NULL;
		return rl_fail("%s: out of memory for %" PRIu64 " entries", log->name, log->nr_entries);
	}
	off = ss;
	for (i = 0; i < log->nr_entries; i++) {
		struct rl_entry *e = &log->e[i];
		char fl[64];

		if (off > log->size || log->size - off < ss) {
			rl_fail("%s: truncated entry %" PRIu64 ": its header at byte %" PRIu64
				" runs past the end of the log (%" PRIu64 " bytes)",
				log->name, i, off, log->size);
			goto refuse;
		}
		if (full_pread(log->fd, hdr, ss, off) != 0) {
			rl_fail("%s: entry %" PRIu64 ": cannot read its header at byte %" PRIu64 ": %s", log->name, i,
				off, errno ? strerror(errno) : "end of file");
			goto refuse;
		}
		e->sector = le64(hdr);
		e->nr_sectors = le64(hdr + 8);
		e->flags = le64(hdr + 16);
		e->data_len = le64(hdr + 24);
		if (e->flags & ~RL_KNOWN) {
			rl_fail("%s: entry %" PRIu64 ": unknown flags 0x%" PRIx64 " (known: 0x%llx)", log->name, i,
				e->flags, (unsigned long long)RL_KNOWN);
			goto refuse;
		}
		if (e->flags & RL_MARK) {
			size_t n;

			if (e->data_len > ss - RL_HDR) {
				rl_fail("%s: entry %" PRIu64 ": a mark of %" PRIu64 " bytes does not fit its sector",
					log->name, i, e->data_len);
				goto refuse;
			}
			n = e->data_len < sizeof(e->mark) - 1 ? (size_t)e->data_len : sizeof(e->mark) - 1;
			memcpy(e->mark, hdr + RL_HDR, n);
			e->mark[n] = '\0';
		}
		off += ss;
		e->data_off = off;
		if (!(e->flags & RL_DISCARD)) {
			if (e->nr_sectors > (log->size - off) / ss) {
				rl_fail("%s: truncated entry %" PRIu64 " (%s, sector %" PRIu64 "): %" PRIu64
					" sectors of data from byte %" PRIu64 " run past the end of the log (%" PRIu64
					" bytes)",
					log->name, i, flag_names(e->flags, fl, sizeof(fl)), e->sector, e->nr_sectors,
					off, log->size);
				goto refuse;
			}
			off += e->nr_sectors * ss;
		}
	}
	log->end = off;
	free(hdr);
	return 0;
refuse:
	free(hdr);
	free(log->e);
	log->e = NULL;
	return -1;
}

static int rl_open(struct rl_log *log, const char *name)
{
	struct stat st;

	memset(log, 0, sizeof(*log));
	log->name = name;
	log->fd = open(name, O_RDONLY | O_CLOEXEC);
	if (log->fd < 0)
		return rl_fail("%s: %s", name, strerror(errno));
	if (fstat(log->fd, &st) != 0) {
		rl_fail("%s: %s", name, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rl_fail("%s: not a regular file", name);
		goto fail;
	}
	log->size = (uint64_t)st.st_size;
	if (rl_parse(log) == 0)
		return 0;
fail:
	if (close(log->fd) != 0)
		fprintf(stderr, "replay-log: close %s: %s\n", name, strerror(errno));
	log->fd = -1;
	return -1;
}

static void rl_close(struct rl_log *log)
{
	free(log->e);
	log->e = NULL;
	if (log->fd >= 0 && close(log->fd) != 0)
		fprintf(stderr, "replay-log: close %s: %s\n", log->name, strerror(errno));
	log->fd = -1;
}

/* rl_check_image: every entry from..to-1 lies inside an image of img_size bytes. */
static int rl_check_image(const struct rl_log *log, uint64_t from, uint64_t to, const char *img, uint64_t img_size)
{
	uint64_t i, sectors = img_size / log->sectorsize;

	if (img_size % log->sectorsize)
		return rl_fail("%s: %" PRIu64 " bytes: not a whole number of %" PRIu32 "-byte sectors", img, img_size,
			       log->sectorsize);
	for (i = from; i < to; i++) {
		const struct rl_entry *e = &log->e[i];

		if (e->sector > sectors || e->nr_sectors > sectors - e->sector)
			return rl_fail("%s: entry %" PRIu64 " writes sectors %" PRIu64 "+%" PRIu64
				       ", beyond the end of %s (%" PRIu64 " sectors of %" PRIu32 " bytes)",
				       log->name, i, e->sector, e->nr_sectors, img, sectors, log->sectorsize);
	}
	return 0;
}

/* rl_apply_sectors: the first sectors of entry i's data (zeros for a discard) written onto the image. */
static int rl_apply_sectors(const struct rl_log *log, uint64_t i, uint64_t sectors, int out, const char *outname)
{
	const struct rl_entry *e = &log->e[i];
	static unsigned char buf[1 << 20];
	uint64_t done = 0, total = sectors * log->sectorsize, dst = e->sector * log->sectorsize;

	if (e->flags & RL_MARK)
		return 0;
	if (e->flags & RL_DISCARD)
		memset(buf, 0, sizeof(buf));
	while (done < total) {
		size_t n = total - done < sizeof(buf) ? (size_t)(total - done) : sizeof(buf);

		if (!(e->flags & RL_DISCARD) && full_pread(log->fd, buf, n, e->data_off + done) != 0)
			return rl_fail("%s: entry %" PRIu64 ": cannot read its data: %s", log->name, i,
				       errno ? strerror(errno) : "end of file");
		if (full_pwrite(out, buf, n, dst + done) != 0)
			return rl_fail("%s: cannot write entry %" PRIu64 " at byte %" PRIu64 ": %s", outname, i,
				       dst + done, strerror(errno));
		done += n;
	}
	return 0;
}

/* rl_apply_one: entry i whole. */
static int rl_apply_one(const struct rl_log *log, uint64_t i, int out, const char *outname)
{
	return rl_apply_sectors(log, i, log->e[i].nr_sectors, out, outname);
}

/* The draw: splitmix64 from the seed, one number per entry that can be dropped. */
static uint64_t rl_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int open_image(const char *name, int flags, uint64_t *size)
{
	struct stat st;
	int fd = open(name, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		return rl_fail("%s: %s", name, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rl_fail("%s: %s", name, S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
		if (close(fd) != 0)
			fprintf(stderr, "replay-log: close %s: %s\n", name, strerror(errno));
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static int close_image(int fd, const char *name, bool written)
{
	if (written && fsync(fd) != 0) {
		rl_fail("%s: fsync: %s", name, strerror(errno));
		if (close(fd) != 0)
			fprintf(stderr, "replay-log: close %s: %s\n", name, strerror(errno));
		return -1;
	}
	if (close(fd) != 0)
		return rl_fail("%s: close: %s", name, strerror(errno));
	return 0;
}

static int orig_size(const char *name, uint64_t *size)
{
	int fd = open_image(name, O_RDONLY, size);

	return fd < 0 ? -1 : close_image(fd, name, false);
}

/* copy_image: OUT becomes a copy of ORIG (holes stay holes); returns OUT's fd. */
static int copy_image(const char *orig, const char *outname, uint64_t *size)
{
	static unsigned char buf[1 << 20], zero[4096];
	uint64_t off = 0;
	int in, out;

	in = open_image(orig, O_RDONLY, size);
	if (in < 0)
		return -1;
	out = open(outname, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		rl_fail("%s: %s", outname, strerror(errno));
		goto fail_in;
	}
	while (off < *size) {
		size_t n = *size - off < sizeof(buf) ? (size_t)(*size - off) : sizeof(buf), b;

		if (full_pread(in, buf, n, off) != 0) {
			rl_fail("%s: read at byte %" PRIu64 ": %s", orig, off, errno ? strerror(errno) : "end of file");
			goto fail_out;
		}
		for (b = 0; b < n; b += sizeof(zero)) { /* write what is not zero, block by block */
			size_t k = n - b < sizeof(zero) ? n - b : sizeof(zero);

			if (memcmp(buf + b, zero, k) != 0 && full_pwrite(out, buf + b, k, off + b) != 0) {
				rl_fail("%s: write at byte %" PRIu64 ": %s", outname, off + b, strerror(errno));
				goto fail_out;
			}
		}
		off += n;
	}
	if (ftruncate(out, (off_t)*size) != 0) {
		rl_fail("%s: ftruncate: %s", outname, strerror(errno));
		goto fail_out;
	}
	if (close(in) != 0) {
		rl_fail("%s: close: %s", orig, strerror(errno));
		in = -1;
		goto fail_out;
	}
	return out;
fail_out:
	if (close(out) != 0)
		fprintf(stderr, "replay-log: close %s: %s\n", outname, strerror(errno));
fail_in:
	if (in >= 0 && close(in) != 0)
		fprintf(stderr, "replay-log: close %s: %s\n", orig, strerror(errno));
	return -1;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!s[0] || s[0] == '-' || s[0] == '+')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

static int cmd_list(const struct rl_log *log)
{
	uint64_t i;
	char fl[64];

	if (printf("log %s: version %" PRIu64 ", sector size %" PRIu32 ", %" PRIu64 " entries, %" PRIu64
		   " bytes used of %" PRIu64 "\n",
		   log->name, log->version, log->sectorsize, log->nr_entries, log->end, log->size) < 0)
		return -1;
	for (i = 0; i < log->nr_entries; i++) {
		const struct rl_entry *e = &log->e[i];

		if (printf("entry %" PRIu64 " flags %s sector %" PRIu64 " sectors %" PRIu64 " bytes %" PRIu64 "%s%s\n",
			   i, flag_names(e->flags, fl, sizeof(fl)), e->sector, e->nr_sectors,
			   e->nr_sectors * log->sectorsize, e->flags & RL_MARK ? " mark " : "",
			   e->flags & RL_MARK ? e->mark : "") < 0)
			return -1;
	}
	if (fputs("flush/FUA points:", stdout) == EOF)
		return -1;
	for (i = 0; i < log->nr_entries; i++)
		if ((log->e[i].flags & (RL_FLUSH | RL_FUA)) && printf(" %" PRIu64, i) < 0)
			return -1;
	return putchar('\n') == EOF ? -1 : 0;
}

static int cmd_points(const struct rl_log *log)
{
	uint64_t i;

	for (i = 0; i < log->nr_entries; i++)
		if ((log->e[i].flags & (RL_FLUSH | RL_FUA)) && printf("%" PRIu64 "\n", i) < 0)
			return -1;
	return 0;
}

/* apply_range: entries from..to-1 onto the open image out. */
static int apply_range(const struct rl_log *log, uint64_t from, uint64_t to, int out, const char *outname,
		       uint64_t size)
{
	uint64_t i;

	if (rl_check_image(log, from, to, outname, size) != 0)
		return -1;
	for (i = from; i < to; i++)
		if (rl_apply_one(log, i, out, outname) != 0)
			return -1;
	return 0;
}

/* subset_always: an entry no draw can drop: a FUA write or a mark (on the medium or no write at all), a FLUSH
 * without data. */
static bool subset_always(const struct rl_entry *e)
{
	return (e->flags & (RL_FUA | RL_MARK)) || e->nr_sectors == 0;
}

/* subset_torn: with the keep-or-drop draw from seed over entries from..to-1, the last kept write that can be torn
 * (drawn, of more than one sector, not a discard) or to when there is none; *prefix its sectors that reach the
 * medium, drawn after the keep-or-drop draw so that tearing leaves that draw as it is without it. */
static uint64_t subset_torn(const struct rl_log *log, uint64_t from, uint64_t to, uint64_t seed, uint64_t *prefix)
{
	uint64_t i, state = seed, torn = to;

	for (i = from; i < to; i++) {
		const struct rl_entry *e = &log->e[i];

		if (!subset_always(e) && (rl_next(&state) >> 63) != 0 && e->nr_sectors > 1 && !(e->flags & RL_DISCARD))
			torn = i;
	}
	if (torn < to)
		*prefix = 1 + rl_next(&state) % (log->e[torn].nr_sectors - 1);
	return torn;
}

/* subset_draw: of entries from..to-1, FLUSH entries without data, FUA writes and marks are always applied, the
 * others kept or dropped by the draw from seed, and with tear the last kept one torn (subset_torn); each decision
 * is printed. */
static int subset_draw(const struct rl_log *log, uint64_t from, uint64_t to, uint64_t seed, bool tear, int out,
		       const char *outname, uint64_t size)
{
	uint64_t i, state = seed, kept = 0, dropped = 0, prefix = 0, torn = to;
	int n;

	if (rl_check_image(log, from, to, outname, size) != 0)
		return -1;
	if (tear)
		torn = subset_torn(log, from, to, seed, &prefix);
	for (i = from; i < to; i++) {
		const struct rl_entry *e = &log->e[i];
		bool always = subset_always(e);
		bool keep = always || (rl_next(&state) >> 63) != 0;

		if (i == torn) {
			if (printf("torn %" PRIu64 " sector %" PRIu64 " sectors %" PRIu64 " prefix %" PRIu64 "\n", i,
				   e->sector, e->nr_sectors, prefix) < 0 ||
			    rl_apply_sectors(log, i, prefix, out, outname) != 0)
				return -1;
			continue;
		}
		if (!always && printf("%s %" PRIu64 " sector %" PRIu64 " sectors %" PRIu64 "\n",
				      keep ? "kept" : "dropped", i, e->sector, e->nr_sectors) < 0)
			return -1;
		if (keep && rl_apply_one(log, i, out, outname) != 0)
			return -1;
		if (!always)
			keep ? kept++ : dropped++;
	}
	if (tear)
		n = printf("subset of entries %" PRIu64 "..%" PRIu64 " (seed %" PRIu64 "): %" PRIu64
			   " kept, %d torn, %" PRIu64 " dropped\n",
			   from, to, seed, kept, torn < to, dropped);
	else
		n = printf("subset of entries %" PRIu64 "..%" PRIu64 " (seed %" PRIu64 "): %" PRIu64 " kept, %" PRIu64
			   " dropped\n",
			   from, to, seed, kept, dropped);
	return n < 0 ? -1 : 0;
}

#ifdef REPLAY_LOG_NO_MAIN
/* apply_subset: subset_draw without tearing, as tests/fuzz/replay-log.c calls it. */
static int apply_subset(const struct rl_log *log, uint64_t from, uint64_t to, uint64_t seed, int out,
			const char *outname, uint64_t size)
{
	return subset_draw(log, from, to, seed, false, out, outname, size);
}
#endif

static int usage(void)
{
	fputs("usage: replay-log list LOG | count LOG | points LOG\n"
	      "       replay-log replay LOG ORIG OUT N\n"
	      "       replay-log apply LOG OUT FROM N\n"
	      "       replay-log random LOG ORIG OUT FLUSH-ENTRY SEED [tear]\n"
	      "       replay-log subset LOG OUT FROM END SEED [tear]\n",
	      stderr);
	return 2;
}

static int want_entries(const struct rl_log *log, uint64_t n, const char *what)
{
	if (n > log->nr_entries)
		return rl_fail("%s: %s %" PRIu64 ", but the log has %" PRIu64 " entries", log->name, what, n,
			       log->nr_entries);
	return 0;
}

/* OUTNAME made as a copy of ORIG for entries 0..END-1, refused before it is made when a write of those would
 * fall outside ORIG: the open image, or -1 said. */
static int fresh_copy(const struct rl_log *log, uint64_t end, const char *orig, const char *outname, uint64_t *size)
{
	if (orig_size(orig, size) != 0 || rl_check_image(log, 0, end, orig, *size) != 0)
		return -1;
	return copy_image(orig, outname, size);
}

/* OUTNAME, an image made earlier, opened to go on with entries FROM..END-1 (cmd and end_name for the message):
 * the open image, or -1 said. */
static int go_on(const struct rl_log *log, const char *cmd, const char *end_name, uint64_t from, uint64_t end,
		 const char *outname, uint64_t *size)
{
	if (from > end) {
		rl_fail("%s: FROM %" PRIu64 " is after %s %" PRIu64, cmd, from, end_name, end);
		return -1;
	}
	if (want_entries(log, end, "entries up to") != 0)
		return -1;
	return open_image(outname, O_RDWR, size);
}

static int run(int argc, char **argv)
{
	struct rl_log log;
	const char *cmd;
	uint64_t a = 0, b = 0, seed = 0, size = 0;
	int rc = -1, out = -1;
	bool wrote = false, tear = false;
	const char *outname = NULL;

	if (argc < 3)
		return usage();
	cmd = argv[1];
	if (!strcmp(cmd, "list") || !strcmp(cmd, "count") || !strcmp(cmd, "points")) {
		if (argc != 3)
			return usage();
	} else if (!strcmp(cmd, "replay")) {
		if (argc != 6 || parse_u64(argv[5], &a) != 0)
			return usage();
	} else if (!strcmp(cmd, "apply")) {
		if (argc != 6 || parse_u64(argv[4], &a) != 0 || parse_u64(argv[5], &b) != 0)
			return usage();
	} else if (!strcmp(cmd, "random") || !strcmp(cmd, "subset")) {
		/* one word more than the command needs can only be tear */
		if (argc == 8 && !strcmp(argv[7], "tear"))
			tear = true, argc--;
		if (argc != 7 || parse_u64(argv[6], &seed) != 0)
			return usage();
		if (!strcmp(cmd, "random") ? parse_u64(argv[5], &a) != 0 :
					     parse_u64(argv[4], &a) != 0 || parse_u64(argv[5], &b) != 0)
			return usage();
	} else {
		return usage();
	}
	if (rl_open(&log, argv[2]) != 0)
		return 1;
	if (!strcmp(cmd, "list")) {
		rc = cmd_list(&log);
	} else if (!strcmp(cmd, "count")) {
		rc = printf("%" PRIu64 "\n", log.nr_entries) < 0 ? -1 : 0;
	} else if (!strcmp(cmd, "points")) {
		rc = cmd_points(&log);
	} else if (!strcmp(cmd, "replay")) {
		outname = argv[4];
		if (want_entries(&log, a, "replay of entries 0.. up to") != 0)
			goto done;
		if ((out = fresh_copy(&log, a, argv[3], outname, &size)) < 0)
			goto done;
		wrote = true;
		rc = apply_range(&log, 0, a, out, outname, size);
	} else if (!strcmp(cmd, "apply")) {
		outname = argv[3];
		if ((out = go_on(&log, "apply", "N", a, b, outname, &size)) < 0)
			goto done;
		wrote = true;
		rc = apply_range(&log, a, b, out, outname, size);
	} else if (!strcmp(cmd, "random")) {
		outname = argv[4];
		if (a >= log.nr_entries || !(log.e[a].flags & RL_FLUSH)) {
			rl_fail("%s: entry %" PRIu64 " is not a FLUSH entry (see: replay-log points %s)", log.name, a,
				log.name);
			goto done;
		}
		for (b = a + 1; b < log.nr_entries && !(log.e[b].flags & RL_FLUSH); b++)
			;
		if ((out = fresh_copy(&log, b, argv[3], outname, &size)) < 0)
			goto done;
		wrote = true;
		rc = apply_range(&log, 0, a + 1, out, outname, size);
		if (rc == 0)
			rc = subset_draw(&log, a + 1, b, seed, tear, out, outname, size);
	} else {
		outname = argv[3];
		if ((out = go_on(&log, "subset", "END", a, b, outname, &size)) < 0)
			goto done;
		wrote = true;
		rc = subset_draw(&log, a, b, seed, tear, out, outname, size);
	}
done:
	if (out >= 0 && close_image(out, outname, wrote) != 0)
		rc = -1;
	rl_close(&log);
	if (fflush(stdout) == EOF) {
		rl_fail("standard output: %s", strerror(errno));
		rc = -1;
	}
	return rc == 0 ? 0 : 1;
}

#ifndef REPLAY_LOG_NO_MAIN
int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	if (rc == 1)
		fprintf(stderr, "replay-log: %s\n", rl_err[0] ? rl_err : "failed");
	return rc;
}
#endif

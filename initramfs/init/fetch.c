/* live.fetch=: a served image's layers and hash trees downloaded (busybox wget, HTTP) into RAM. */
#include "fetch.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "log.h"
#include "net.h"
#include "progress.h"
#include "util.h"

#ifndef WGET /* the unit tests build with their own */
#define WGET "/bin/wget"
#endif
/* Seconds a transfer may bring nothing before wget is stopped and the download retried. busybox wget's own -T
 * would do it, but Debian's busybox-static 1.35 crashes (SIGSEGV) on -T: the init watches the file instead. */
#define WGET_IDLE_S 10
#define BACKOFF_MAX_S 8
#define MANIFEST "live/MANIFEST"
/* The buffer the MANIFEST is read into: a longer one (256 files of long names would be about 20 KiB; an image has a
 * few) is not a MANIFEST, and its transfer is stopped once it has more. */
#define MANIFEST_MAX 16384
/* The whole fetch has a deadline, so a server that trickles a byte now and then (which the idle check and
 * live.timeout, both about no data at all, let through) cannot hold the boot for ever: the MANIFEST within
 * live.timeout s of the first try, the layers within live.timeout s plus their bytes at FETCH_MIN_RATE (256 KiB/s,
 * 2 Mbit/s: 1 GiB in 68 min). Then the boot stops naming the file, the URL and what was tried. */
#define FETCH_MIN_RATE (256ULL << 10)

/* n bytes at s that end with suffix: their length without it, else 0. */
static size_t stem_len(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n > k && memcmp(s + n - k, suffix, k) == 0 ? n - k : 0;
}

/* NN-name.squashfs or NN-name.verity, the name as the medium's layers have it (layer_stem_ok), fitting
 * fetch_file's name. */
static bool good_name(const char *s, size_t n)
{
	size_t stem = stem_len(s, n, LAYER_SUFFIX);

	if (!stem)
		stem = stem_len(s, n, LAYER_VERITY_SUFFIX);
	return n < sizeof(((struct fetch_file *)0)->name) && layer_stem_ok(s, stem);
}

int fetch_manifest_parse(const char *text, struct fetch_file *files, int max, char *err, size_t elen)
{
	const char *s = text, *line;
	size_t len;
	int n = 0, lineno = 0, i;

	while (text_item(&s, "\n", &line, &len)) {
		unsigned long long v = 0;
		size_t k = 0;

		lineno++;
		if (len && line[len - 1] == '\r')
			len--;
		if (len == 0)
			continue;
		for (; k < len && isdigit((unsigned char)line[k]); k++) {
			if (v > (~0ULL - 9) / 10)
				return text_err(err, elen, "MANIFEST line %d: size too large", lineno);
			v = v * 10 + (unsigned long long)(line[k] - '0');
		}
		if (k == 0 || k >= len || line[k] != ' ')
			return text_err(err, elen, "MANIFEST line %d: not 'BYTES NAME'", lineno);
		k++;
		if (!good_name(line + k, len - k))
			return text_err(err, elen, "MANIFEST line %d: '%.*s' is not NN-name.squashfs or NN-name.verity",
					lineno, (int)(len - k > 64 ? 64 : len - k), line + k);
		if (n == max)
			return text_err(err, elen, "MANIFEST: more than %d files", max);
		memcpy(files[n].name, line + k, len - k);
		files[n].name[len - k] = '\0';
		files[n].bytes = v;
		for (i = 0; i < n; i++)
			if (strcmp(files[i].name, files[n].name) == 0)
				return text_err(err, elen, "MANIFEST line %d: %s listed twice", lineno, files[n].name);
		n++;
	}
	if (n == 0)
		return text_err(err, elen, "MANIFEST lists no files");
	return n;
}

static unsigned long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (unsigned long long)st.st_size : 0;
}

/* wget's own complaint (its last line), for our message. */
static void last_line(const char *path, char *buf, size_t len)
{
	char text[512], *nl;
	int n = read_text(path, text, sizeof(text));

	buf[0] = '\0';
	if (n <= 0) {
		fail_clear();
		return;
	}
	while (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
	nl = strrchr(text, '\n');
	text_fmt(buf, len, "%s", nl ? nl + 1 : text);
}

struct source {
	char urls[FETCH_URL_MAX][FETCH_URL_LEN];
	int n, cur;
	unsigned timeout;
	double start, deadline; /* progress_now() of the first try, and when the step gives up */
};

/* Why wget_once stopped wget itself, if it did. */
enum stopped { RAN_OUT, STOP_IDLE, STOP_BIG, STOP_LATE };

/* One wget run of url into dest (continued where it stopped with -c), with the progress counted as the file
 * grows; stopped after WGET_IDLE_S s without data, once the file has more than cap bytes (0: no cap) or at the
 * source's deadline (*why says which). Its exit status (128+signal), -1 if it could not run. */
static int wget_once(const char *url, const char *dest, bool resume, unsigned long long cap, const struct source *src,
		     struct progress *pr, double *last_growth, enum stopped *why)
{
	const char *argv[] = {WGET, "-q", resume ? "-c" : "-q", "-O", dest, url, NULL};
	unsigned long long before = file_size(dest), now;
	double grew = progress_now();
	int st, fd;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		fd = open(LIVE_RUN "/fetch.err", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0 && dup2(fd, 2) < 0)
			_exit(126);
		execv(WGET, (char *const *)argv);
		_exit(127);
	}
	*why = RAN_OUT;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r < 0 && errno != EINTR)
			return -1;
		now = file_size(dest);
		if (now > before) {
			if (pr)
				progress_add(pr, now - before);
			before = now;
			*last_growth = grew = progress_now();
		}
		if (r == pid)
			break;
		if (*why == RAN_OUT) {
			if (cap && now > cap)
				*why = STOP_BIG;
			else if (progress_now() >= src->deadline)
				*why = STOP_LATE;
			else if (progress_now() - grew >= WGET_IDLE_S) {
				msg("live.fetch: %s: no data for %d s: stopping this try", url, WGET_IDLE_S);
				*why = STOP_IDLE;
			}
			if (*why != RAN_OUT && kill(pid, SIGKILL) != 0)
				dbg("kill wget: %s", strerror(errno));
		}
		sleep_ms(200);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* rel from the current URL into dest, bytes long (0: whatever the server sends, up to cap bytes, from scratch each
 * try). Failures move on to the next URL after a pause that doubles up to BACKOFF_MAX_S; live.timeout s without a
 * byte more, or the source's deadline, ends it. */
static int download(struct source *src, const char *rel, const char *dest, unsigned long long bytes,
		    unsigned long long cap, struct progress *pr)
{
	char url[PATH_LEN], why[200];
	double last_growth = progress_now(), backoff = 1, left;
	unsigned long long have;
	enum stopped stop;
	int rc, tries = 0;

	for (;;) {
		have = file_size(dest);
		if (bytes && have == bytes)
			return 0;
		if (bytes && have > bytes)
			return fail(EMSGSIZE, "live.fetch: %s is %llu bytes, more than the %llu MANIFEST says", rel,
				    have, bytes);
		if (path_fmt(url, sizeof(url), "%s%s", src->urls[src->cur], rel) != 0)
			return -1;
		if (!bytes && unlink(dest) != 0 && errno != ENOENT)
			return fail(errno, "remove %s", dest);
		rc = wget_once(url, dest, bytes != 0, cap, src, pr, &last_growth, &stop);
		if (rc < 0)
			return fail(errno, "run " WGET);
		have = file_size(dest);
		if (bytes ? have == bytes : rc == 0 && (!cap || have <= cap))
			return 0;
		tries++;
		last_line(LIVE_RUN "/fetch.err", why, sizeof(why));
		if (stop == STOP_BIG || (cap && have > cap))
			text_fmt(why, sizeof(why), "it sent more than %llu bytes, more than a MANIFEST holds: stopped",
				 cap);
		else if (stop == STOP_LATE)
			text_fmt(why, sizeof(why), "still sending (%llu bytes here) at the deadline: stopped", have);
		else if (rc == 0)
			text_fmt(why, sizeof(why), "the transfer ended at %llu of %llu bytes", have, bytes);
		/* no try that would begin at the deadline or after it */
		left = src->deadline - progress_now();
		if (left <= backoff)
			return fail(
				ETIMEDOUT,
				"live.fetch: download %s: not done within %.0f s (the deadline: live.timeout, for the "
				"layers plus their size at %llu KiB/s) after %d tries; last from %s: %s",
				rel, src->deadline - src->start, FETCH_MIN_RATE >> 10, tries, url,
				why[0] ? why : "wget failed");
		if (progress_now() - last_growth >= src->timeout)
			return fail(
				ETIMEDOUT,
				"live.fetch: download %s: no progress for %u s (live.timeout) after %d tries; last from %s: %s",
				rel, src->timeout, tries, url, why[0] ? why : "wget failed");
		msg("live.fetch: %s: %s (wget exit %d, %llu bytes here); again in %.0f s%s%s", url,
		    why[0] ? why : "failed", rc, have, backoff, src->n > 1 ? " from " : "",
		    src->n > 1 ? src->urls[(src->cur + 1) % src->n] : "");
		sleep_ms((long)(backoff * 1000));
		backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : backoff * 2;
		src->cur = (src->cur + 1) % src->n;
	}
}

int fetch_medium(const struct plan *p, struct boot *b)
{
	static struct source src;
	static struct fetch_file files[FETCH_MAX_FILES];
	static char text[MANIFEST_MAX];
	char err[300], dir[PATH_LEN + 16], dest[PATH_LEN + 96], opts[64], manifest[PATH_LEN];
	unsigned long long total = 0;
	unsigned r = 0;
	struct progress pr;
	double secs;
	int n, i;

	memset(&src, 0, sizeof(src));
	src.timeout = p->timeout;
	if (p->nfetch == 0)
		return fail(EINVAL, "%s", p->net_bad);
	memcpy(src.urls, p->fetch, sizeof(src.urls));
	src.n = p->nfetch;
	/* a lab of clients started at once spreads over the mirrors */
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (unsigned)(progress_now() * 1000);
	src.cur = (int)(r % (unsigned)src.n);
	if (!b->net_result[0] && net_up(p, b) != 0)
		return -1;
	if (path_fmt(manifest, sizeof(manifest), "%s/fetch-MANIFEST", p->run_live) != 0)
		return -1;
	msg("live.fetch: reading %s%s (%d URL(s))", src.urls[src.cur], MANIFEST, src.n);
	src.start = progress_now();
	src.deadline = src.start + src.timeout;
	if (download(&src, MANIFEST, manifest, 0, MANIFEST_MAX - 1, NULL) != 0)
		return -1;
	if (read_text(manifest, text, sizeof(text)) < 0)
		return -1;
	n = fetch_manifest_parse(text, files, FETCH_MAX_FILES, err, sizeof(err));
	if (n < 0)
		return fail(EBADMSG, "live.fetch: %s%s: %s", src.urls[src.cur], MANIFEST, err);
	for (i = 0; i < n; i++) {
		if (files[i].bytes > (~0ULL >> 2) - total)
			return fail(EFBIG, "live.fetch: the MANIFEST's sizes add up beyond reason");
		total += files[i].bytes;
	}
	if (total + RAM_RESERVE > p->facts.mem_available)
		return fail(ENOMEM,
			    "live.fetch: the image is %llu MiB and the system needs %llu MiB more, but MemAvailable is "
			    "%llu MiB: give the machine more RAM, or boot it with live.nbd= (layers read on demand)",
			    total >> 20, RAM_RESERVE >> 20, p->facts.mem_available >> 20);
	if (path_fmt(dir, sizeof(dir), "%s/" LIVE_MEDIUM, p->run_live) != 0 || mkdir_p(dir, 0755) != 0)
		return -1;
	/* A retry from the rescue shell continues into the tmpfs mounted before. */
	if (!b->device[0]) {
		if (path_fmt(opts, sizeof(opts), "size=%llu,mode=0755",
			     total + (unsigned long long)(n + 2) * (1 << 20)) != 0 ||
		    do_mount("tmpfs", dir, "tmpfs", MS_NODEV | MS_NOSUID, opts) != 0)
			return -1;
		text_fmt(b->device, sizeof(b->device), "%s", src.urls[src.cur]);
		text_fmt(b->medium_fstype, sizeof(b->medium_fstype), "tmpfs");
	}
	if (path_fmt(dest, sizeof(dest), "%s/live", dir) != 0 || mkdir_p(dest, 0755) != 0)
		return -1;
	src.start = progress_now();
	src.deadline = src.start + src.timeout + (double)(total / FETCH_MIN_RATE);
	msg("live.fetch: %d file(s), %llu bytes (%llu MiB), into RAM at %s (MemAvailable %llu MiB), within %.0f s", n,
	    total, total >> 20, dir, p->facts.mem_available >> 20, src.deadline - src.start);
	progress_start(&pr, "live.fetch", total);
	for (i = 0; i < n; i++) {
		char rel[96];

		if (path_fmt(rel, sizeof(rel), "live/%s", files[i].name) != 0 ||
		    path_fmt(dest, sizeof(dest), "%s/%s", dir, rel) != 0)
			return -1;
		pr.done += file_size(dest); /* a retry: what is there already */
		if (download(&src, rel, dest, files[i].bytes, 0, &pr) != 0)
			return -1;
	}
	secs = progress_end(&pr);
	msg("live.fetch: %d file(s), %llu MiB in %.1f s from %s; dm-verity checks every block before the boot goes on",
	    n, total >> 20, secs, src.urls[src.cur]);
	text_fmt(b->toram_result, sizeof(b->toram_result), "in RAM already: live.fetch downloaded %llu MiB",
		 total >> 20);
	return 0;
}

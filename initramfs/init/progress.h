#ifndef LIVE_PROGRESS_H
#define LIVE_PROGRESS_H
/* One console progress line per second for long reads (live.toram copy, live.check):
 * "WHAT: 12.0 / 40.0 MiB (30%), 25.3 MB/s". */
struct progress {
	const char *what;
	unsigned long long done, total;
	double start, last;
};

double progress_now(void);
void progress_start(struct progress *pr, const char *what, unsigned long long total);
/* Count n more bytes; prints when a second has passed since the last line. */
void progress_add(struct progress *pr, unsigned long long n);
/* The final line; returns the elapsed seconds. */
double progress_end(struct progress *pr);
#endif

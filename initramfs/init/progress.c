#include "progress.h"

#include <time.h>

#include "log.h"

double progress_now(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
		return 0;
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void show(struct progress *pr, double t)
{
	double el = t - pr->start;

	pr->last = t;
	msg("%s: %.1f / %.1f MiB (%llu%%), %.1f MB/s", pr->what, (double)pr->done / 1048576,
	    (double)pr->total / 1048576, pr->total ? pr->done * 100 / pr->total : 100,
	    el > 0 ? (double)pr->done / el / 1e6 : 0.0);
}

void progress_start(struct progress *pr, const char *what, unsigned long long total)
{
	pr->what = what;
	pr->done = 0;
	pr->total = total;
	pr->start = pr->last = progress_now();
}

void progress_add(struct progress *pr, unsigned long long n)
{
	double t;

	pr->done += n;
	t = progress_now();
	if (t - pr->last >= 1.0)
		show(pr, t);
}

double progress_end(struct progress *pr)
{
	double t = progress_now();

	show(pr, t);
	return t - pr->start;
}

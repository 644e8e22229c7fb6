/* replay-log.c - libFuzzer target for the write-log parser and replay of tests/powerloss/replay-log.c: the input
 * is a log file; when the parser takes it, every entry is checked against a 64 KiB image and replayed onto it,
 * whole and as a seeded subset. Run by tests/unit/replay-log.sh (clang -fsanitize=fuzzer,address,undefined). */
#define REPLAY_LOG_NO_MAIN
#include "../powerloss/replay-log.c"

#include <sys/mman.h>

#define IMAGE_SIZE (64 * 1024)

static int memfd(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		abort();
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int logfd = -1, imgfd = -1;
	struct rl_log log;

	if (logfd < 0) {
		logfd = memfd("log");
		imgfd = memfd("image");
		if (!freopen("/dev/null", "w", stdout)) /* the kept/dropped lines of apply_subset */
			abort();
	}
	if (ftruncate(logfd, 0) != 0 || (size && full_pwrite(logfd, data, size, 0) != 0) || ftruncate(imgfd, 0) != 0 ||
	    ftruncate(imgfd, IMAGE_SIZE) != 0)
		abort();
	memset(&log, 0, sizeof(log));
	log.name = "fuzz";
	log.fd = logfd;
	log.size = size;
	rl_err[0] = '\0';
	if (rl_parse(&log) != 0) {
		if (!rl_err[0] || log.e) /* a refusal always says why and keeps nothing */
			abort();
		return 0;
	}
	if (log.end > log.size || log.end < log.sectorsize)
		abort();
	if (rl_check_image(&log, 0, log.nr_entries, "image", IMAGE_SIZE) == 0) {
		if (apply_range(&log, 0, log.nr_entries, imgfd, "image", IMAGE_SIZE) != 0)
			abort(); /* a checked log replays: its data is in the file */
		if (ftruncate(imgfd, 0) != 0 || ftruncate(imgfd, IMAGE_SIZE) != 0 ||
		    apply_subset(&log, 0, log.nr_entries, size, imgfd, "image", IMAGE_SIZE) != 0)
			abort();
	}
	free(log.e);
	return 0;
}

/* The one loop attach: the medium's layers and their hash trees, the store's image file, the RAM copies. */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/loop.h>

#include "log.h"
#include "util.h"

/* A read-write attach needs the device open for writing: the kernel makes the loop read-only otherwise. */
static int open_loop(int nr, bool ro)
{
	char dev[32];
	int fd, mode = (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC;

	if (path_fmt(dev, sizeof(dev), "/dev/loop%d", nr) != 0)
		return -1;
	fd = open(dev, mode);
	/* devtmpfs normally has the node already; make it if the kernel was faster than devtmpfs. */
	if (fd < 0 && errno == ENOENT) {
		if (mknod(dev, S_IFBLK | 0600, makedev(7, (unsigned)nr)) != 0 && errno != EEXIST)
			return fail(errno, "mknod %s", dev);
		fd = open(dev, mode);
	}
	if (fd < 0)
		return fail(errno, "open %s", dev);
	return fd;
}

int loop_attach(const char *file, bool ro, unsigned long long offset, unsigned long long size, int *nr)
{
	struct loop_config cfg;
	int ctl, lfd = -1, ffd, tries, n = -1, e;

	ffd = open(file, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (ffd < 0)
		return fail(errno, "open %s", file);
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		e = errno;
		if (close(ffd) != 0)
			msg("close %s: %s", file, strerror(errno));
		return fail(e, "open /dev/loop-control");
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (uint32_t)ffd;
	/* Read-only also lets LOOP_CHANGE_FD (toram) swap the file; autoclear so an unmount frees the device
	 * (and, for the store's image file, the FAT it is on). */
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | (ro ? LO_FLAGS_READ_ONLY : 0);
	cfg.info.lo_offset = offset;
	cfg.info.lo_sizelimit = size;
	text_fmt((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", file);
	/* Another process may grab the free device between GET_FREE and configure: retry a few times. */
	for (tries = 0; tries < 8; tries++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			fail(errno, "get a free loop device for %s", file);
			break;
		}
		lfd = open_loop(n, ro);
		if (lfd < 0)
			break;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
			break;
		e = errno;
		/* kernels before 5.8 lack LOOP_CONFIGURE: the two-step way */
		if ((e == EINVAL || e == ENOTTY) && ioctl(lfd, LOOP_SET_FD, ffd) == 0) {
			if (ioctl(lfd, LOOP_SET_STATUS64, &cfg.info) == 0)
				break;
			fail(errno, "set status of /dev/loop%d for %s", n, file);
			if (ioctl(lfd, LOOP_CLR_FD, 0) != 0)
				msg("could not detach /dev/loop%d: %s", n, strerror(errno));
			if (close(lfd) != 0)
				msg("close /dev/loop%d: %s", n, strerror(errno));
			lfd = -1;
			break;
		}
		fail(e, "attach %s to /dev/loop%d", file, n);
		if (close(lfd) != 0)
			msg("close /dev/loop%d: %s", n, strerror(errno));
		lfd = -1;
		if (e != EBUSY)
			break;
	}
	if (close(ctl) != 0)
		msg("close /dev/loop-control: %s", strerror(errno));
	/* The loop device holds its own reference to the file. */
	if (close(ffd) != 0)
		msg("close %s: %s", file, strerror(errno));
	if (lfd >= 0)
		*nr = n;
	return lfd;
}

int loop_change(int nr, const char *file)
{
	char dev[32];
	int lfd, ffd, rc = 0;

	text_fmt(dev, sizeof(dev), "/dev/loop%d", nr);
	ffd = open(file, O_RDONLY | O_CLOEXEC);
	if (ffd < 0)
		return fail(errno, "open %s", file);
	lfd = open(dev, O_RDONLY | O_CLOEXEC);
	if (lfd < 0)
		rc = fail(errno, "open %s", dev);
	else if (ioctl(lfd, LOOP_CHANGE_FD, ffd) != 0)
		rc = fail(errno, "switch %s to %s", dev, file);
	if (lfd >= 0 && close(lfd) != 0 && rc == 0)
		rc = fail(errno, "close %s", dev);
	if (close(ffd) != 0 && rc == 0)
		rc = fail(errno, "close %s", file);
	return rc;
}

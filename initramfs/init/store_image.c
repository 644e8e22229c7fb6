/* The store as an image file (liveunion-rw.img, or file:PATH) on a FAT/exFAT partition, or on the partition holding
 * a booted ISO file: attached through a loop device, in place with an offset when the file lies in one piece (the FAT
 * never mounted read-write), else through the mounted filesystem. */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/loop.h>

#include "disk.h"
#include "log.h"
#include "loop.h"
#include "luks.h"
#include "util.h"

unsigned long long store_fat_cluster_bytes(const unsigned char boot[512])
{
	/* exFAT gives both as powers of two; its largest valid cluster is 32 MiB (shifts 9-12 and up to 25 in all) */
	if (memcmp(boot + 3, "EXFAT   ", 8) == 0)
		return boot[0x6c] < 13 && boot[0x6d] < 26 ? 1ULL << (boot[0x6c] + boot[0x6d]) : 0;
	return (unsigned long long)le16(boot + 0x0b) * boot[0x0d];
}

/* Where the image file lies on the FAT/exFAT partition, if in one piece: *offset in bytes. The kernel's
 * own block map is asked at both ends of every cluster, where a FAT file may jump. 0 contiguous, -1 not. */
static int file_extent(const char *part, int fd, unsigned long long fsize, unsigned long long *offset)
{
	unsigned char boot[512];
	unsigned long long cluster = 0, first;
	char why[160];
	int bsz, pfd;

	if ((pfd = open(part, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(pfd, boot, sizeof(boot), 0) == (ssize_t)sizeof(boot))
		cluster = store_fat_cluster_bytes(boot);
	if (close(pfd) != 0)
		return -1;
	if (file_block_run(fd, fsize, cluster, &bsz, &first, why, sizeof(why)) != 0) {
		dbg("image file on %s: %s", part, why);
		return -1;
	}
	*offset = first * (unsigned long long)bsz;
	return 0;
}

void store_note_read_only(struct store *s, const char *dev)
{
	int ro = 0, fd;

	if (s->ro || (fd = open(dev, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (ioctl(fd, BLKROGET, &ro) != 0)
		ro = 0;
	if (close(fd) != 0)
		msg("close %s: %s", dev, strerror(errno));
	if (!ro)
		return;
	s->ro = s->dev_ro = true;
	msg("persistence: %s is a read-only device (write-protected?): its store can only be used read-only", dev);
}

/* Beside an ISO file (live.iso=) the partition may be ext2/3/4 too: its journal keeps it consistent, so the image is
 * used through it (never by offset under a mounted ext4's feet). */
static const char *const image_fs[] = {"vfat", "exfat", "ext4"};

/* The partition mounted read-only on s->host (FAT/exFAT, or ext4 too beside an ISO file: *type) and the image file
 * on it looked at: its size, and whether it lies in one piece (*direct 0, at *offset). 0 with the partition left
 * mounted, else -1 with it unmounted. */
static int image_look(const char *part, const char *path, bool iso_host, struct store *s, char *file, size_t flen,
		      const char **type, unsigned long long *fsize, unsigned long long *offset, int *direct)
{
	size_t i, ntypes = sizeof(image_fs) / sizeof(image_fs[0]) - !iso_host;
	struct stat st;
	int ffd;

	*direct = -1;
	for (i = 0; i < ntypes; i++)
		if (mount(part, s->host, image_fs[i], MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) ==
		    0)
			break;
	if (i == ntypes)
		return -1;
	*type = image_fs[i];
	if (path_fmt(file, flen, "%s/%s", s->host, path[0] == '/' ? path + 1 : path) != 0) {
		msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
		fail_clear();
		ffd = -1;
	} else if ((ffd = open(file, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (fstat(ffd, &st) == 0 && S_ISREG(st.st_mode)) {
			*fsize = (unsigned long long)st.st_size;
			*direct = strcmp(*type, "ext4") == 0 ? -1 : file_extent(part, ffd, *fsize, offset);
		}
		if (close(ffd) != 0)
			msg("close %s: %s", file, strerror(errno));
	}
	if (ffd < 0 || *fsize == 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	return 0;
}

/* The image in one piece attached in place, its partition unmounted first: the loop's fd. -2 when it cannot be
 * (the loop device refused direct I/O and the store is not on 4 KiB boundaries: said), the partition mounted again
 * for the way through its filesystem; -1 failed. */
static int attach_in_place(const char *part, const char *path, const char *type, unsigned long long offset,
			   unsigned long long fsize, struct store *s)
{
	int fd, nr;

	if (umount(s->host) != 0) {
		msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if ((fd = loop_attach(part, s->ro, offset, fsize, &nr)) < 0) {
		msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
		return -1;
	}
	/* Through the partition's page cache every write at the store's ends would rewrite the whole 4 KiB page
	 * around it: with a store that does not start and end on a page boundary (a FAT with 512-byte clusters)
	 * the FAT's own sectors beside it (its directory, say) would be written again and again, and a power
	 * cut could tear them. Direct I/O writes exactly the store's sectors; without it only a store on page
	 * boundaries is used this way. */
	if (s->ro || ioctl(fd, LOOP_SET_DIRECT_IO, 1UL) == 0 || (offset % 4096 == 0 && fsize % 4096 == 0)) {
		text_fmt(s->dev, sizeof(s->dev), "/dev/loop%d", nr);
		text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s, in one piece at byte %llu) via %s", path,
			 part + 5, type, offset, s->dev);
		return fd;
	}
	msg("persistence: %s on /dev/%s lies at byte %llu, not on a 4 KiB boundary, and the loop device refused "
	    "direct I/O (%s): used through the %s filesystem instead, which stays mounted until power-off",
	    path, part + 5, offset, strerror(errno), type);
	if (close(fd) != 0)
		msg("close /dev/loop%d: %s", nr, strerror(errno));
	if (mount(part, s->host, type, MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) != 0) {
		msg("persistence: mount %s again: %s", part, strerror(errno));
		return -1;
	}
	return -2;
}

/* store_image_on without the LUKS2 look (store.h): in place when in one piece, else through the filesystem. */
static int image_attach(const char *part, const char *path, bool iso_host, struct store *s)
{
	char file[PATH_LEN * 2];
	unsigned long long offset = 0, fsize = 0;
	const char *type;
	int fd, nr, direct;

	if (image_look(part, path, iso_host, s, file, sizeof(file), &type, &fsize, &offset, &direct) != 0)
		return -1;
	store_note_read_only(s, part); /* before s->ro decides how the image is attached */
	if (direct == 0) {
		if ((fd = attach_in_place(part, path, type, offset, fsize, s)) != -2)
			return fd;
	} else if (strcmp(type, "ext4") == 0)
		msg("persistence: %s on /dev/%s is used through its ext4 filesystem, which stays mounted until power-off",
		    path, part + 5);
	else
		msg("persistence: %s on /dev/%s is fragmented: used through the %s filesystem, which stays mounted "
		    "until power-off (other systems may then call it not cleanly unmounted)",
		    path, part + 5, type);
	if (!s->ro && mount(NULL, s->host, NULL, MS_REMOUNT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) != 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if ((fd = loop_attach(file, s->ro, 0, 0, &nr)) < 0) {
		msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	text_fmt(s->dev, sizeof(s->dev), "/dev/loop%d", nr);
	text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s) via %s", path, part + 5, type, s->dev);
	return fd;
}

int store_image_on(const char *part, const char *path, bool iso_host, struct store *s)
{
	struct luks_id lid;
	int fd = image_attach(part, path, iso_host, s);

	/* a LUKS2 container in the file is unlocked before use, as a partition's is */
	if (fd >= 0 && (s->luks = luks_read_id(s->dev, &lid) == 1)) {
		size_t used = strlen(s->what);

		text_fmt(s->what + used, sizeof(s->what) - used, ", LUKS2");
	}
	return fd;
}

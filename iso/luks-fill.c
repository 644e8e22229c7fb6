/* luks-fill: write a plain filesystem image into the data segment of a LUKS2 container file, encrypted the way
 * dm-crypt reads it (aes-xts-plain64, 512-byte sectors: the IV of each sector is its number counted from the start
 * of the segment, 64-bit little-endian, zero-padded to 16 bytes). iso/mkusb.sh uses it for --encrypt: the build host
 * needs no device-mapper (cryptsetup luksFormat writes the header; this fills the data), and the filesystem inside
 * is made by mkfs on a plain file as everywhere else in mkusb.
 *
 *   luks-fill VOLUME-KEY-FILE PLAIN-IMAGE CONTAINER SEGMENT-OFFSET
 *
 * VOLUME-KEY-FILE holds the 64-byte key given to `cryptsetup luksFormat --volume-key-file` (AES-256-XTS: two
 * 256-bit keys); the container must already be long enough. Exit 0, or 1 with the reason on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECTOR 512
#define CHUNK (1024 * 1024)

static int die(const char *what, const char *why)
{
	fprintf(stderr, "luks-fill: %s: %s\n", what, why);
	return 1;
}

static int read_all(int fd, unsigned char *b, size_t n, off_t at)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, b + got, n - got, at + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int write_all(int fd, const unsigned char *b, size_t n, off_t at)
{
	size_t put = 0;

	while (put < n) {
		ssize_t w = pwrite(fd, b + put, n - put, at + (off_t)put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		put += (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static unsigned char in[CHUNK], out[CHUNK];
	unsigned char key[64], iv[16];
	struct stat st, cst;
	unsigned long long offset, sector = 0;
	char *end;
	EVP_CIPHER_CTX *ctx;
	off_t at;
	int kfd, pfd, cfd, len, rc = 0;

	if (argc != 5)
		return die("usage", "luks-fill VOLUME-KEY-FILE PLAIN-IMAGE CONTAINER SEGMENT-OFFSET");
	errno = 0;
	offset = strtoull(argv[4], &end, 10);
	if (errno || *end || offset % SECTOR)
		return die(argv[4], "the segment offset must be a byte count, a multiple of 512");
	if ((kfd = open(argv[1], O_RDONLY | O_CLOEXEC)) < 0)
		return die(argv[1], strerror(errno));
	if (read_all(kfd, key, sizeof(key), 0) != 0 || pread(kfd, iv, 1, sizeof(key)) != 0)
		return die(argv[1], "not a 64-byte volume key");
	if (close(kfd) != 0)
		return die(argv[1], strerror(errno));
	if ((pfd = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0 || fstat(pfd, &st) != 0)
		return die(argv[2], strerror(errno));
	if (st.st_size % SECTOR)
		return die(argv[2], "its size is not a whole number of 512-byte sectors");
	if ((cfd = open(argv[3], O_WRONLY | O_CLOEXEC)) < 0 || fstat(cfd, &cst) != 0)
		return die(argv[3], strerror(errno));
	if ((unsigned long long)cst.st_size < offset + (unsigned long long)st.st_size)
		return die(argv[3], "too short for the plain image after the segment offset");
	if (!(ctx = EVP_CIPHER_CTX_new()))
		return die("openssl", "no cipher context");
	for (at = 0; at < st.st_size; at += CHUNK) {
		size_t n = (size_t)(st.st_size - at < CHUNK ? st.st_size - at : CHUNK), i;

		if (read_all(pfd, in, n, at) != 0) {
			rc = die(argv[2], "read failed");
			break;
		}
		for (i = 0; i < n; i += SECTOR, sector++) {
			memset(iv, 0, sizeof(iv));
			for (int b = 0; b < 8; b++)
				iv[b] = (unsigned char)(sector >> (8 * b));
			if (EVP_EncryptInit_ex(ctx, EVP_aes_256_xts(), NULL, key, iv) != 1 ||
			    EVP_EncryptUpdate(ctx, out + i, &len, in + i, SECTOR) != 1 || len != SECTOR) {
				rc = die("openssl", "AES-XTS encryption failed");
				break;
			}
		}
		if (rc || write_all(cfd, out, n, (off_t)offset + at) != 0) {
			rc = rc ? rc : die(argv[3], "write failed");
			break;
		}
	}
	EVP_CIPHER_CTX_free(ctx);
	memset(key, 0, sizeof(key));
	if (close(pfd) != 0 || fsync(cfd) != 0 || close(cfd) != 0)
		rc = rc ? rc : die(argv[3], strerror(errno));
	return rc;
}

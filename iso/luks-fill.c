/* luks-fill: write a plain filesystem image into the data segment of a LUKS2 container file, encrypted the way
 * dm-crypt reads it (aes-xts-plain64, 512-byte sectors: the IV of each sector is its number counted from the start
 * of the segment, 64-bit little-endian, zero-padded to 16 bytes), or read it back out in plain. iso/mkusb.sh uses
 * it for --encrypt: the build host needs no device-mapper (cryptsetup luksFormat writes the header; this fills the
 * data), and the filesystem inside is made by mkfs on a plain file as everywhere else in mkusb. The power-loss test
 * of an encrypted store (tests/qemu/persist-powerloss-luks.sh) reads each crash point's store out with -d.
 *
 *   luks-fill VOLUME-KEY-FILE PLAIN-IMAGE CONTAINER SEGMENT-OFFSET
 *   luks-fill -d VOLUME-KEY-FILE CONTAINER SEGMENT-OFFSET BYTES PLAIN-IMAGE
 *
 * VOLUME-KEY-FILE holds the 64-byte key given to `cryptsetup luksFormat --volume-key-file` (AES-256-XTS: two
 * 256-bit keys); the container must already be long enough (it may be a whole disk image: SEGMENT-OFFSET then counts
 * from the disk's start). -d writes BYTES of the segment, decrypted, to PLAIN-IMAGE (made or truncated). Exit 0, or
 * 1 with the reason on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "full_io.h"

#define SECTOR 512
#define CHUNK (1024 * 1024)

static int die(const char *what, const char *why)
{
	fprintf(stderr, "luks-fill: %s: %s\n", what, why);
	return 1;
}

/* XTS over N bytes (whole sectors) of in to out, the first sector being number sector of the segment. */
static int xts(EVP_CIPHER_CTX *ctx, int enc, const unsigned char *key, unsigned long long sector,
	       const unsigned char *in, unsigned char *out, size_t n)
{
	unsigned char iv[16];
	size_t i;
	int len;

	for (i = 0; i < n; i += SECTOR, sector++) {
		memset(iv, 0, sizeof(iv));
		for (int b = 0; b < 8; b++)
			iv[b] = (unsigned char)(sector >> (8 * b));
		if (EVP_CipherInit_ex(ctx, EVP_aes_256_xts(), NULL, key, iv, enc) != 1 ||
		    EVP_CipherUpdate(ctx, out + i, &len, in + i, SECTOR) != 1 || len != SECTOR)
			return -1;
	}
	return 0;
}

static int number(const char *s, unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || *v % SECTOR ? -1 : 0;
}

int main(int argc, char **argv)
{
	static unsigned char in[CHUNK], out[CHUNK];
	unsigned char key[64], extra;
	unsigned long long offset, bytes;
	struct stat st, cst;
	EVP_CIPHER_CTX *ctx;
	const char *kf, *plain, *cont;
	int dec = argc > 1 && strcmp(argv[1], "-d") == 0;
	int kfd, pfd, cfd, rc = 0;
	off_t at;

	if (dec ? argc != 7 : argc != 5)
		return die("usage", "luks-fill VOLUME-KEY-FILE PLAIN-IMAGE CONTAINER SEGMENT-OFFSET, or "
				    "luks-fill -d VOLUME-KEY-FILE CONTAINER SEGMENT-OFFSET BYTES PLAIN-IMAGE");
	kf = argv[1 + dec];
	cont = argv[3];
	plain = dec ? argv[6] : argv[2];
	if (number(argv[4], &offset) != 0)
		return die(argv[4], "the segment offset must be a byte count, a multiple of 512");
	if (dec && number(argv[5], &bytes) != 0)
		return die(argv[5], "the size must be a byte count, a multiple of 512");
	if ((kfd = open(kf, O_RDONLY | O_CLOEXEC)) < 0)
		return die(kf, strerror(errno));
	if (full_pread(kfd, key, sizeof(key), 0) != 0 || pread(kfd, &extra, 1, sizeof(key)) != 0)
		return die(kf, "not a 64-byte volume key");
	if (close(kfd) != 0)
		return die(kf, strerror(errno));
	if (dec) {
		if ((cfd = open(cont, O_RDONLY | O_CLOEXEC)) < 0 || fstat(cfd, &cst) != 0)
			return die(cont, strerror(errno));
		if ((unsigned long long)cst.st_size < offset + bytes)
			return die(cont, "too short for that many bytes after the segment offset");
		if ((pfd = open(plain, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
			return die(plain, strerror(errno));
	} else {
		if ((pfd = open(plain, O_RDONLY | O_CLOEXEC)) < 0 || fstat(pfd, &st) != 0)
			return die(plain, strerror(errno));
		if (st.st_size % SECTOR)
			return die(plain, "its size is not a whole number of 512-byte sectors");
		bytes = (unsigned long long)st.st_size;
		if ((cfd = open(cont, O_WRONLY | O_CLOEXEC)) < 0 || fstat(cfd, &cst) != 0)
			return die(cont, strerror(errno));
		if ((unsigned long long)cst.st_size < offset + bytes)
			return die(cont, "too short for the plain image after the segment offset");
	}
	if (!(ctx = EVP_CIPHER_CTX_new()))
		return die("openssl", "no cipher context");
	/* the container side is at offset; -d reads it, without -d it is written */
	int src = dec ? cfd : pfd, dst = dec ? pfd : cfd;
	off_t src_at = dec ? (off_t)offset : 0, dst_at = dec ? 0 : (off_t)offset;
	const char *src_name = dec ? cont : plain, *dst_name = dec ? plain : cont;

	for (at = 0; (unsigned long long)at < bytes; at += CHUNK) {
		size_t n = (size_t)(bytes - (unsigned long long)at < CHUNK ? bytes - (unsigned long long)at : CHUNK);

		if (full_pread(src, in, n, src_at + at) != 0) {
			rc = die(src_name, "read failed");
			break;
		}
		if (xts(ctx, !dec, key, (unsigned long long)at / SECTOR, in, out, n) != 0) {
			rc = die("openssl", dec ? "AES-XTS decryption failed" : "AES-XTS encryption failed");
			break;
		}
		if (full_pwrite(dst, out, n, dst_at + at) != 0) {
			rc = die(dst_name, "write failed");
			break;
		}
	}
	EVP_CIPHER_CTX_free(ctx);
	memset(key, 0, sizeof(key));
	if (close(src) != 0 || fsync(dst) != 0 || close(dst) != 0)
		rc = rc ? rc : die(dst_name, strerror(errno));
	return rc;
}

#ifndef LIVE_NBD_H
#define LIVE_NBD_H
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* The fixed-newstyle handshake of the NBD protocol (doc/proto.md of the nbd project), as pure functions over the
 * server's bytes (the fuzz target reads them). */
#define NBD_GREETING_LEN 18 /* "NBDMAGIC", "IHAVEOPT", 16-bit handshake flags */
#define NBD_REPLY_HDR_LEN 20
/* The handshake flags of a greeting, or -1 when it is not an NBD newstyle server's. */
int nbd_parse_greeting(const unsigned char *b, size_t len);
struct nbd_opt_reply {
	uint32_t option, type, len;
};
/* 0, or -1 when the header is not an option reply. */
int nbd_parse_reply(const unsigned char *b, size_t len, struct nbd_opt_reply *out);
/* An NBD_REP_INFO's NBD_INFO_EXPORT payload: 1 with size and flags; 0 for another info type; -1 malformed. */
int nbd_parse_info(const unsigned char *b, size_t len, uint64_t *size, uint16_t *flags);
/* A reply type as words ("the export is unknown to the server"), for messages. */
const char *nbd_reply_text(uint32_t type);

/* The medium step's first half under live.nbd=: the network, then the export on a free /dev/nbdN, served by a
 * child process that stays in the kernel's NBD_DO_IT for the life of the system (named "@liveunion-nbd", so
 * systemd's shutdown leaves it to the last). The medium is then found on it as on any disk. */
int nbd_connect(const struct plan *p, struct boot *b);
/* The memory the child's name is written into (argv[0] of the init; at least 16 bytes long). */
void nbd_set_name_area(char *argv0, size_t len);
#endif

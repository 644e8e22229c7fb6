#ifndef LIVE_TORAM_H
#define LIVE_TORAM_H
#include "plan.h"

/* live.toram: copy the layers into a tmpfs, move the loop devices onto the copies, release the
 * medium. Too little RAM is not an error: it says so and the boot goes on from the medium. */
int toram_copy(const struct plan *p, struct boot *b);
#endif

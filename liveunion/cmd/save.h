/* save.h - `liveunion save`'s own: cmd_save.c picks the name, number and destination, save_write.c writes. */
#ifndef LIVEUNION_SAVE_H
#define LIVEUNION_SAVE_H

/* The upper written as squashfs to tmp (its name reserved first; removed on any failure, also Ctrl-C), synced
 * and renamed to final without replacing anything. 0 with *size, or 1 said. */
int save_write(const char *upper, const char *dest, const char *tmp, const char *final, const char *exclude,
	       long long *size);
#endif

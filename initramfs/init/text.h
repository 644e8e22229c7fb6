#ifndef LIVE_TEXT_H
#define LIVE_TEXT_H
/* Text helpers that depend on nothing (the planning code and its host tests use them). */
#include <stdbool.h>
#include <stddef.h>

/* snprintf for message text: a truncated message is still useful, so it only terminates. */
void text_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* text_fmt into err, then -1: "fail with why in err" in one statement. */
int text_err(char *err, size_t elen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The one list walker: the next item of *list up to one of seps (empty items too), *list moved past it and
 * its separator. false at the end of the list. */
bool text_item(const char **list, const char *seps, const char **item, size_t *len);
/* Append item (ilen bytes) to a comma-separated list; an item that does not fit is left out. */
void text_list_add(char *list, size_t len, const char *item, size_t ilen);
#endif

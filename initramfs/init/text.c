#include "text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void text_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len == 0)
		return;
	va_start(ap, fmt);
	if (vsnprintf(buf, len, fmt, ap) < 0)
		buf[0] = '\0';
	va_end(ap);
}

int text_err(char *err, size_t elen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (elen && vsnprintf(err, elen, fmt, ap) < 0)
		err[0] = '\0';
	va_end(ap);
	return -1;
}

bool text_item(const char **list, const char *seps, const char **item, size_t *len)
{
	if (!**list)
		return false;
	*item = *list;
	*len = strcspn(*list, seps);
	*list += *len + ((*list)[*len] != '\0');
	return true;
}

void text_list_add(char *list, size_t len, const char *item, size_t ilen)
{
	size_t used = strlen(list);
	int w = snprintf(list + used, len - used, "%s%.*s", used ? "," : "", (int)ilen, item);

	if (w < 0 || (size_t)w >= len - used)
		list[used] = '\0';
}

/* textbuf.c -- see textbuf.h. */
#include "textbuf.h"

#include <stdlib.h>
#include <string.h>

bool vg_text_append(char **p, size_t *len, size_t *cap, const void *data, size_t n, size_t first) {
  if (*len + n + 1 > *cap) {
    size_t c = *cap > first ? *cap : first;
    while (c < *len + n + 1) c *= 2;
    char *grown = realloc(*p, c);
    if (grown == NULL) return false;
    *p = grown;
    *cap = c;
  }
  memcpy(*p + *len, data, n);
  *len += n;
  (*p)[*len] = '\0';
  return true;
}

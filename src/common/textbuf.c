/* textbuf.c -- see textbuf.h. */
#include "textbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_FIRST 4096

bool vg_textbuf_reserve(struct vg_textbuf *t, size_t n) {
  if (t->oom) return false;
  if (n >= SIZE_MAX - t->len) { /* len + n + 1 would wrap */
    t->oom = true;
    return false;
  }
  size_t need = t->len + n + 1;
  if (t->data != NULL && need <= t->cap) return true;
  size_t c = t->cap > t->first ? t->cap : t->first;
  if (c == 0) c = DEFAULT_FIRST;
  while (c < need) c = c <= SIZE_MAX / 2 ? c * 2 : need;
  char *grown = realloc(t->data, c);
  if (grown == NULL) {
    t->oom = true;
    return false;
  }
  if (t->data == NULL) grown[0] = '\0';
  t->data = grown;
  t->cap = c;
  return true;
}

bool vg_textbuf_add(struct vg_textbuf *t, const void *data, size_t n) {
  if (!vg_textbuf_reserve(t, n)) return false;
  if (n > 0) memcpy(t->data + t->len, data, n);
  t->len += n;
  t->data[t->len] = '\0';
  return true;
}

bool vg_textbuf_puts(struct vg_textbuf *t, const char *s) {
  return vg_textbuf_add(t, s, strlen(s));
}

bool vg_textbuf_vprintf(struct vg_textbuf *t, const char *fmt, va_list ap) {
  if (t->oom) return false;
  /* Straight into the room there is; again once grown when it did not fit. */
  for (int pass = 0; pass < 2; pass++) {
    size_t room = t->data != NULL ? t->cap - t->len : 0;
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(room > 0 ? t->data + t->len : NULL, room, fmt, copy);
    va_end(copy);
    if (n < 0) { /* an encoding error: nothing appended, as with a failed fprintf */
      if (t->data != NULL) t->data[t->len] = '\0';
      return false;
    }
    if ((size_t)n < room) {
      t->len += (size_t)n;
      return true;
    }
    if (t->data != NULL) t->data[t->len] = '\0'; /* undo the cut-off copy's bytes */
    if (!vg_textbuf_reserve(t, (size_t)n)) return false;
  }
  return false; /* not reached: the second pass has the room */
}

bool vg_textbuf_printf(struct vg_textbuf *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bool ok = vg_textbuf_vprintf(t, fmt, ap);
  va_end(ap);
  return ok;
}

void vg_textbuf_reset(struct vg_textbuf *t) {
  t->len = 0;
  if (t->data != NULL) t->data[0] = '\0';
}

char *vg_textbuf_take(struct vg_textbuf *t, size_t *len) {
  char *data = t->oom ? NULL : t->data;
  if (data != NULL && len != NULL) *len = t->len;
  if (t->oom) free(t->data);
  *t = (struct vg_textbuf){.first = t->first};
  return data;
}

void vg_textbuf_free(struct vg_textbuf *t) {
  free(t->data);
  *t = (struct vg_textbuf){.first = t->first};
}

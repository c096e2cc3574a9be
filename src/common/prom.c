/* prom.c -- see prom.h. */
#include "prom.h"

#include <stdarg.h>
#include <string.h>

/* s with '\\' and '\n' escaped, and '"' too when quote: runs of bytes that
 * need no escape are copied at once. */
static bool put_escaped(struct vg_textbuf *out, const char *s, bool quote) {
  const char *run = s;
  for (;; s++) {
    if (*s != '\0' && *s != '\\' && *s != '\n' && !(quote && *s == '"')) continue;
    vg_textbuf_add(out, run, (size_t)(s - run));
    if (*s == '\0') break;
    vg_textbuf_add(out, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
    run = s + 1;
  }
  return !out->oom;
}

bool vg_prom_family(struct vg_textbuf *out, const char *name, const char *type, const char *help) {
  vg_textbuf_printf(out, "# HELP %s ", name);
  put_escaped(out, help, false);
  return vg_textbuf_printf(out, "\n# TYPE %s %s\n", name, type);
}

bool vg_prom_label(struct vg_textbuf *set, const char *name, const char *value) {
  if (set->len > 0) vg_textbuf_add(set, ",", 1);
  vg_textbuf_printf(set, "%s=\"", name);
  put_escaped(set, value, true);
  return vg_textbuf_add(set, "\"", 1);
}

bool vg_prom_sample(struct vg_textbuf *out, const char *name, const struct vg_textbuf *labels,
                    const char *value_fmt, ...) {
  if (labels != NULL && labels->oom) out->oom = true; /* a cut label set must not be written */
  vg_textbuf_puts(out, name);
  if (labels != NULL && labels->len > 0) {
    vg_textbuf_add(out, "{", 1);
    vg_textbuf_add(out, labels->data, labels->len);
    vg_textbuf_add(out, "}", 1);
  }
  vg_textbuf_add(out, " ", 1);
  va_list ap;
  va_start(ap, value_fmt);
  vg_textbuf_vprintf(out, value_fmt, ap);
  va_end(ap);
  return vg_textbuf_add(out, "\n", 1);
}

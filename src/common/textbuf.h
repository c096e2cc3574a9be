/*
 * textbuf.h -- the project's one growing byte buffer (Redis's sds, git's
 * strbuf): whatever is collected or written piece by piece until its size is
 * known -- API responses and watch lines (k8s/http.c, k8s/watch.c), request
 * bodies (httpd.c), files read whole (k8s/config.c), the extender's JSON
 * answers (extender_out.c) and the Prometheus text of /metrics (prom.c).
 *
 * The bytes stay NUL-terminated, so text can be handed on as a C string
 * once taken. Capacity doubles, starting at `first` (0: 4 KiB), so a body
 * arriving in pieces is copied O(1) times per byte; a caller that knows the
 * final size sets first to it plus one and the buffer is allocated once.
 * Running out of memory is sticky: the failing call and every later one
 * return false and append nothing, and vg_textbuf_take returns NULL, so a
 * writer checks once at the end instead of after every piece.
 *
 * A zeroed struct ({0}, or {.first = N}) is an empty buffer. Part of
 * src/common, hence of libvgpu.so's sources: libc only.
 */
#ifndef VG_TEXTBUF_H
#define VG_TEXTBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct vg_textbuf {
  char *data;   /* len bytes and a NUL; NULL until something was reserved */
  size_t len;   /* bytes held, without the NUL */
  size_t cap;   /* bytes allocated */
  size_t first; /* the first allocation, at least (0: 4096) */
  bool oom;     /* an allocation failed: see above */
};

/* Room for n more bytes and the NUL: allocates (data then holds "") even
 * for n == 0. false when out of memory. */
bool vg_textbuf_reserve(struct vg_textbuf *t, size_t n);

/* Appends n bytes of data (which may hold NULs). false when out of memory. */
bool vg_textbuf_add(struct vg_textbuf *t, const void *data, size_t n);

/* Appends the C string s. */
bool vg_textbuf_puts(struct vg_textbuf *t, const char *s);

/* Appends printf's output. */
bool vg_textbuf_printf(struct vg_textbuf *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool vg_textbuf_vprintf(struct vg_textbuf *t, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Empties the buffer for reuse, keeping its memory (and a sticky oom). */
void vg_textbuf_reset(struct vg_textbuf *t);

/* The bytes (malloc'd, NUL-terminated; the caller frees) and, when len is
 * not NULL, their count; t is left empty ({0} with its first kept). NULL
 * after running out of memory (the bytes are freed) or when nothing was
 * ever reserved. */
char *vg_textbuf_take(struct vg_textbuf *t, size_t *len);

/* Frees the bytes; t is left empty, as vg_textbuf_take leaves it. */
void vg_textbuf_free(struct vg_textbuf *t);

#endif

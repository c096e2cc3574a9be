/*
 * textbuf.h -- appending to a growing, NUL-terminated buffer: how the API
 * client collects responses and watch lines and the HTTP servers request
 * bodies, in one place.
 */
#ifndef VG_TEXTBUF_H
#define VG_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Appends n bytes of data to *p (*len used of *cap), keeping a NUL after
 * them; when it must grow, *cap doubles from first (at least) so that a
 * body arriving in pieces is copied O(1) times per byte. false when out of
 * memory, leaving the buffer as it was. */
bool vg_text_append(char **p, size_t *len, size_t *cap, const void *data, size_t n, size_t first);

#endif

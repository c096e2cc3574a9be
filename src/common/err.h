/*
 * err.h -- the small error object every vgpu module returns.
 *
 * Following libnvidia-container, a failure is described where it happens
 * (what failed and why, in words a user can act on) and handed back up; the
 * caller decides whether to print it. Nothing deep inside a library writes to
 * stderr or exits.
 */
#ifndef VG_ERR_H
#define VG_ERR_H

#include <stddef.h>

#define VG_ERR_MAX 512

struct vg_err {
  char msg[VG_ERR_MAX];
};

/* Fills err (if not NULL) with a printf-style message; always returns -1 so
 * that failure sites can write `return vg_err_set(err, ...);`. */
int vg_err_set(struct vg_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

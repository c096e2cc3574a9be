/* err.c -- see err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int vg_err_set(struct vg_err *err, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
  }
  return -1;
}

/*
 * prom.h -- the Prometheus text exposition format (0.0.4), written into a
 * textbuf: the one writer of the three daemons' /metrics (the node agent's
 * agent/metrics.c, vgpu-scheduler's extender_metrics.c, vgpu-webhook's
 * metrics.c). Each says what its families and samples are; how a line is
 * spelt and what must be escaped is said here once.
 *
 * A family is its "# HELP" and "# TYPE" lines, then its samples:
 * `name{label="value",...} value`. Label values escape backslash, double
 * quote and newline; HELP text escapes backslash and newline (the format's
 * two rules). A label set is built in a textbuf of its own with
 * vg_prom_label, so that a GPU's or a container's labels are escaped once
 * and reused by each of its families. Running out of memory is sticky, as
 * in textbuf.h, and carries from a label set into the text it is used in:
 * the renderer checks once, when it takes the text.
 */
#ifndef VG_PROM_H
#define VG_PROM_H

#include <stdbool.h>

#include "textbuf.h"

/* "# HELP name help\n# TYPE name type\n" (type: counter, gauge, histogram). */
bool vg_prom_family(struct vg_textbuf *out, const char *name, const char *type, const char *help);

/* Adds name="value" to the label set, after a comma unless it is empty;
 * vg_textbuf_reset empties it for the next series. */
bool vg_prom_label(struct vg_textbuf *set, const char *name, const char *value);

/* One sample: "name{labels} value\n", or "name value\n" when labels is NULL
 * or empty; the value is printf's output for value_fmt (the format's number:
 * "%llu", "%.2f", ...). */
bool vg_prom_sample(struct vg_textbuf *out, const char *name, const struct vg_textbuf *labels,
                    const char *value_fmt, ...) __attribute__((format(printf, 4, 5)));

#endif

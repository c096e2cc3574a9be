/*
 * quantity.h -- Kubernetes resource quantities (resource.Quantity) as whole
 * numbers.
 *
 * Every number in a pod's resources reaches us as a quantity string, and not
 * as the user wrote it: the API server stores quantities in canonical form,
 * so vgpu's memory `3000` comes back as "3k", `2048Mi` as "2Gi" and
 * `3e3` stays "3e3". A reader that only knows digits refuses pods the user
 * wrote correctly. This is the one parser every reader uses (extender,
 * device-plugin binder, kubectl inspect), so that they agree on what a pod
 * asks for.
 *
 * The grammar is Kubernetes': an optional sign, digits with an optional
 * decimal point (`1`, `1.5`, `1.`, `.5`), then one suffix -- binary Ki Mi Gi
 * Ti Pi Ei, decimal n u m "" k M G T P E, or a decimal exponent e<int> /
 * E<int> (`E` alone is exa). As the API server does, a value finer than 1n is
 * first rounded up to the next 1n. The result must be a whole number in
 * 0..INT64_MAX: `500m`, `1.5`, `-1` and `10E` are refused with a message that
 * names the text and says why.
 */
#ifndef VG_QUANTITY_H
#define VG_QUANTITY_H

#include <stdint.h>

#include "err.h"

/* Longer texts are refused: the value is computed exactly, digit by digit. */
#define VG_QUANTITY_MAX_TEXT 128

/* The suffix family, which the API server keeps when it canonicalizes. */
enum vg_quantity_format {
  VG_QUANTITY_DECIMAL_SI,      /* "", n u m k M G T P E */
  VG_QUANTITY_BINARY_SI,       /* Ki Mi Gi Ti Pi Ei */
  VG_QUANTITY_DECIMAL_EXPONENT /* e<int>, E<int> */
};

/* Parses text into *value (untouched on error). Returns 0, or -1 with err
 * quoting the text and saying why; *format (may be NULL) is the suffix
 * family. */
int vg_quantity_parse(const char *text, int64_t *value, enum vg_quantity_format *format,
                      struct vg_err *err);

/* text x 10^shift, rounded up to a whole number, as kube-scheduler reads
 * requests: shift 3 gives milli-units ("1.5" CPU -> 1500, "0.1m" -> 1).
 * Returns 0, or -1 with err (a bad text, a negative or too large value). */
int vg_quantity_parse_ceil(const char *text, int shift, int64_t *value, struct vg_err *err);

#endif

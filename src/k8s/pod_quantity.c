/* pod_quantity.c -- see pod_quantity.h. */
#include "pod_quantity.h"

#include "quantity.h"

#define MIB_SHIFT 20

int vg_pod_quantity(json_object *v, enum vg_pod_quantity_unit unit, int64_t *out,
                    struct vg_err *err) {
  /* json-c keeps a number's text as it was written (3e3 stays "3e3"), so a
   * JSON number is read by the same grammar as a string. */
  if (v == NULL ||
      !(json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
        json_object_is_type(v, json_type_double)))
    return vg_err_set(err, "%s is not a quantity (a string such as \"4\" or \"3k\")",
                      v == NULL ? "null" : json_object_to_json_string(v));
  int64_t x;
  enum vg_quantity_format fmt;
  if (vg_quantity_parse(json_object_get_string(v), &x, &fmt, err) != 0) return -1;
  if (unit == VG_QTY_MIB && fmt == VG_QUANTITY_BINARY_SI) {
    if (x & ((1LL << MIB_SHIFT) - 1))
      return vg_err_set(err, "quantity '%s' is not a whole number of MiB",
                        json_object_get_string(v));
    x >>= MIB_SHIFT;
  }
  *out = x;
  return 0;
}

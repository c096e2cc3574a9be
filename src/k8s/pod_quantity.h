/*
 * pod_quantity.h -- a value from a pod's resources (limits or requests) as a
 * whole number, read with the one quantity parser (src/common/quantity.h).
 *
 * The API server sends these as canonical quantity strings ("3k", "2Gi",
 * "3e3"); tests and hand-written bodies may also carry JSON numbers. Both go
 * through the same grammar, so the extender, the device plugin's binder and
 * kubectl inspect read a pod the same way.
 */
#ifndef VG_K8S_POD_QUANTITY_H
#define VG_K8S_POD_QUANTITY_H

#include <stdint.h>

#include <json-c/json.h>

#include "err.h"

enum vg_pod_quantity_unit {
  VG_QTY_COUNT, /* the number itself: GPUs, device IDs, percent */
  /* MiB (vgpu's memory resource, HAMi's unit), except that a value with a binary
   * suffix (Ki Mi Gi Ti Pi Ei) is a size in bytes and must be whole MiB:
   * 4096 and 4Gi are both 4096 MiB. Users write 4096Mi, which the API server
   * hands back as 4Gi, so the binary family has to mean bytes for the value
   * to mean what the user wrote. */
  VG_QTY_MIB
};

/* *out (untouched on error) from v, a string or a JSON number. Returns 0, or
 * -1 with err quoting the value and saying why. */
int vg_pod_quantity(json_object *v, enum vg_pod_quantity_unit unit, int64_t *out,
                    struct vg_err *err);

#endif

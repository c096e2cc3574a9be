/*
 * patch.h -- the JSONPatch (RFC 6902) that routes a pod: spec.schedulerName
 * set to vgpu-scheduler ("add" replaces a member that exists, so one op
 * serves absent, default-scheduler and volcano alike) and the original
 * recorded in vgpu.io/original-scheduler-name, whose '/' the JSON pointer
 * writes as "~1"; and the label vgpu.io/managed (decide.h).
 */
#ifndef VG_WH_PATCH_H
#define VG_WH_PATCH_H

#include <stddef.h>

#include "decide.h"

/* s as one JSON-pointer reference token ('~' -> "~0", '/' -> "~1") into
 * buf; false if it does not fit. */
bool vg_wh_pointer_escape(const char *s, char *buf, size_t len);

/* The patch for a ROUTE decision, as JSON text (malloc'd); NULL when out of
 * memory. */
char *vg_wh_patch(const struct vg_wh_decision *d);

#endif

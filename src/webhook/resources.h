/*
 * resources.h -- the extended resources that send a pod to vgpu-scheduler.
 *
 * Every dialect's names by default (the same list as kube-scheduler's
 * managedResources in deploy/base/scheduler-config.yaml); --resources
 * narrows it to the dialects a cluster runs, so that, say, a cluster whose
 * plain `nvidia.com/gpu` belongs to NVIDIA's own device plugin keeps those
 * pods on the default scheduler.
 */
#ifndef VG_WH_RESOURCES_H
#define VG_WH_RESOURCES_H

#include <stdbool.h>

#include "err.h"

#define VG_WH_RESOURCES_MAX 32
#define VG_WH_RESOURCE_NAME_MAX 318 /* 253 (prefix) + '/' + 63 + NUL */

struct vg_wh_resources {
  int n;
  char name[VG_WH_RESOURCES_MAX][VG_WH_RESOURCE_NAME_MAX];
};

/* The comma list every dialect uses (the --resources default). */
extern const char vg_wh_default_resources[];

/* list: "a,b,..." (spaces around names ignored). -1 with err naming the bad
 * entry (empty, too long, no '/', too many). */
int vg_wh_resources_parse(const char *list, struct vg_wh_resources *r, struct vg_err *err);

bool vg_wh_resources_has(const struct vg_wh_resources *r, const char *name);

#endif

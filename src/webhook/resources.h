/*
 * resources.h -- the extended resources that send a pod to vgpu-scheduler.
 *
 * Every dialect's names by default (common/dialect.h's table, with the
 * renames given by --resource; the same list as kube-scheduler's
 * managedResources in deploy/base/scheduler-config.yaml); --resources
 * narrows it to the dialects a cluster runs, so that, say, a cluster whose
 * plain `nvidia.com/gpu` belongs to NVIDIA's own device plugin keeps those
 * pods on the default scheduler.
 */
#ifndef VG_WH_RESOURCES_H
#define VG_WH_RESOURCES_H

#include <stdbool.h>

#include "dialect.h"
#include "err.h"

#define VG_WH_RESOURCES_MAX 32
#define VG_WH_RESOURCE_NAME_MAX VG_RESOURCE_NAME_MAX

struct vg_wh_resources {
  int n;
  char name[VG_WH_RESOURCES_MAX][VG_WH_RESOURCE_NAME_MAX];
};

/* Every role's name in names (NULL: the defaults): the --resources default. */
void vg_wh_resources_default(struct vg_wh_resources *r, const struct vg_resource_names *names);

/* list: "a,b,..." (spaces around names ignored). -1 with err naming the bad
 * entry (empty, too long, no '/', too many). */
int vg_wh_resources_parse(const char *list, struct vg_wh_resources *r, struct vg_err *err);

bool vg_wh_resources_has(const struct vg_wh_resources *r, const char *name);

#endif

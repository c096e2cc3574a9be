/*
 * writers.h -- who may write the annotations that vgpu's components keep on
 * a running pod (decide.h's guard): the users, as the API server names them
 * in an AdmissionReview's request.userInfo.username, of vgpu-scheduler and
 * of the node agent (vgpu-device-plugin).
 *
 * Each set is --scheduler-user / --node-user, repeatable; an empty set gets
 * the service account deploy/base runs that component as. A user name is
 * compared exactly: the API server authenticates it, the webhook only reads
 * it.
 */
#ifndef VG_WH_WRITERS_H
#define VG_WH_WRITERS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define VG_WH_USERS_MAX 8
/* Room for any service account's user, system:serviceaccount:<63>:<253>. */
#define VG_WH_USER_MAX 352

/* deploy/base/rbac-scheduler.yaml and rbac-device-plugin.yaml. */
#define VG_WH_DEFAULT_SCHEDULER_USER "system:serviceaccount:vgpu-system:vgpu-scheduler"
#define VG_WH_DEFAULT_NODE_USER "system:serviceaccount:vgpu-system:vgpu-device-plugin"

struct vg_wh_users {
  int n;
  char name[VG_WH_USERS_MAX][VG_WH_USER_MAX];
};

struct vg_wh_writers {
  struct vg_wh_users scheduler, node;
};

/* One more name for a set; flag is the option, for err ("--node-user: ..."):
 * an empty name, one too long or one too many is -1. */
int vg_wh_users_add(struct vg_wh_users *u, const char *flag, const char *name, struct vg_err *err);

/* The defaults into the sets no flag filled. */
void vg_wh_writers_default(struct vg_wh_writers *w);

/* user may be NULL (a review without userInfo): in no set. */
bool vg_wh_users_has(const struct vg_wh_users *u, const char *user);

/* "a, b" (at most len-1 bytes, cut with "..." when longer). */
void vg_wh_users_list(const struct vg_wh_users *u, char *out, size_t len);

#endif

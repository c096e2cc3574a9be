/*
 * decide.h -- what the webhook does with one Pod being created.
 *
 * Pure (json-c in, a small struct out): the whole policy of docs/admission.md
 * in one place, tested case by case in tests/webhook.
 *
 *   vgpu.io/scheduler: skip      -> allow unchanged (the user's opt-out)
 *   an initContainer asks        -> refuse: GPUs are placed and accounted for
 *                                   app containers only (the extender refuses
 *                                   such a pod at filter time; this says so at
 *                                   creation instead of leaving it Pending)
 *   a privileged container asks  -> refuse: it sees every GPU of the node
 *   a container asks             -> route to vgpu-scheduler, unless already
 *   nothing asks                 -> allow unchanged
 *
 * "Asks" means a managed resource with a quantity above zero in the
 * container's resources.limits or resources.requests.
 *
 * And, for any Pod, the annotations vgpu's components keep on a running pod
 * are theirs alone (writers.h says who they are):
 *
 *   vgpu.io/assigned       the scheduler's (the node agent writes each
 *                          container's grant from it; the Binding writes it
 *                          first, without a Pod UPDATE, and a resize
 *                          rewrites it)
 *   vgpu.io/assigned-mac   the scheduler's: its signature over the above,
 *                          which the node agent checks (so a forgery fails
 *                          even while this webhook is down)
 *   vgpu.io/resize-node    the node agent's
 *   vgpu.io/resize-status  the scheduler's and the node agent's
 *
 * A routed pod also gets the label vgpu.io/managed: "true", which scopes the
 * API server's calls of the guard to vgpu's pods; no UPDATE may change or
 * remove it.
 *
 * A Pod created with any of them, or an UPDATE by anyone else that sets,
 * changes or removes one, is refused -- otherwise a tenant could write
 * itself a larger grant, or a resize outcome nothing checked. The user's own
 * keys (vgpu.io/resize-request, the label vgpu.io/resize) are left to RBAC.
 */
#ifndef VG_WH_DECIDE_H
#define VG_WH_DECIDE_H

#include <stdbool.h>

#include <json-c/json.h>

#include "assignment.h"
#include "assignment_mac.h"
#include "err.h"
#include "resources.h"
#include "routing.h"
#include "writers.h"

/* The routing names, from their one definition (k8s/routing.h). */
#define VG_WH_SCHEDULER VG_SCHEDULER_NAME
#define VG_WH_OPT_OUT_ANNOTATION VG_OPT_OUT_ANNOTATION
#define VG_WH_OPT_OUT_VALUE VG_OPT_OUT_VALUE
#define VG_WH_ORIGINAL_ANNOTATION "vgpu.io/original-scheduler-name"
/* What the API server defaults an absent spec.schedulerName to. */
#define VG_WH_DEFAULT_SCHEDULER "default-scheduler"
/* The keys the guard keeps, from their codecs (k8s/assignment.h, k8s/assignment_mac.h). */
#define VG_WH_ASSIGNED_ANNOTATION VG_ASSIGNED_ANNOTATION
#define VG_WH_ASSIGNED_MAC_ANNOTATION VG_ASSIGNED_MAC_ANNOTATION
/* The label a routed pod carries: the API server sends the UPDATEs of the
 * pods that have it, and only those, to the guard (the ValidatingWebhook
 * vgpu-guard's objectSelector), so an outage of ours cannot block updates of
 * other pods. Set by the route, never removed. */
#define VG_WH_MANAGED_LABEL VG_MANAGED_LABEL
#define VG_WH_MANAGED_VALUE VG_MANAGED_VALUE

enum vg_wh_verdict { VG_WH_ALLOW, VG_WH_ROUTE, VG_WH_REFUSE };

struct vg_wh_decision {
  enum vg_wh_verdict verdict;
  /* REFUSE: the message the user sees (names the container and resource);
   * ALLOW/ROUTE: why, for the debug log. */
  char why[VG_ERR_MAX];
  /* ROUTE only: */
  bool set_scheduler;       /* spec.schedulerName is not vgpu-scheduler yet */
  char original[256];       /* spec.schedulerName before (default-scheduler if absent) */
  bool record_original;     /* VG_WH_ORIGINAL_ANNOTATION is not on the pod yet */
  bool annotations_present; /* metadata.annotations exists (add a key, not the map) */
  bool add_label;           /* VG_WH_MANAGED_LABEL is not on the pod yet */
  bool labels_present;      /* metadata.labels exists */
};

void vg_wh_decide(json_object *pod, const struct vg_wh_resources *res, struct vg_wh_decision *d);
/* The guard's half of a Pod CREATE, without routing (the validating path,
 * which must not patch): refused if pod carries a guarded annotation. */
void vg_wh_decide_create_guard(json_object *pod, struct vg_wh_decision *d);
/* A Pod UPDATE from old to pod by user (request.userInfo.username; NULL
 * when the review has none, which is no one's): refused if it changes a
 * guarded annotation user is not a writer of; else allowed. */
void vg_wh_decide_update(json_object *old, json_object *pod, const char *user,
                         const struct vg_wh_writers *w, struct vg_wh_decision *d);

#endif

/*
 * review.h -- one AdmissionReview (admission.k8s.io/v1) in, its answer out.
 *
 * Only a Pod CREATE or UPDATE is decided (decide.h), the UPDATE with the
 * user of request.userInfo.username against the writers (writers.h); every
 * other kind, operation or subresource is allowed unchanged. The answer carries the request's uid,
 * and for a routed pod the JSONPatch, base64-encoded.
 *
 * Two kinds of bad input, answered differently on purpose:
 *  - a body that is not an AdmissionReview we can answer (not JSON, no
 *    request.uid, over VG_WH_MAX_BODY): HTTP 400/413 with a plain-text
 *    message. Without a uid no answer can be valid, and the API server
 *    reports a failed call as "failed calling webhook ...: <error>"; with
 *    failurePolicy Fail the pod is then refused either way.
 *  - a review whose Pod we cannot read: allowed:false with status.message,
 *    which the API server shows the user verbatim ("admission webhook
 *    \"pods.vgpu.io\" denied the request: ...").
 */
#ifndef VG_WH_REVIEW_H
#define VG_WH_REVIEW_H

#include <stddef.h>

#include "resources.h"
#include "writers.h"

/* The API server sends at most ~3 MiB objects; a review wraps one. */
#define VG_WH_MAX_BODY (4u * 1024u * 1024u)

enum vg_wh_result {
  VG_WH_R_ALLOWED,
  VG_WH_R_MUTATED,
  VG_WH_R_REFUSED,
  VG_WH_R_INVALID,
  VG_WH_R_COUNT
};

struct vg_wh_reply {
  unsigned status;          /* HTTP status */
  char *body;               /* malloc'd, NUL-terminated; NULL only when out of memory */
  const char *content_type; /* static */
  enum vg_wh_result result; /* for the metrics */
};

/* Which webhook asks: the mutating one (POST /mutate: routes a CREATE and
 * guards it and an UPDATE) or the validating guard (POST /validate: the
 * guard only, never a patch, which a validating webhook may not answer). */
enum vg_wh_mode { VG_WH_MUTATE, VG_WH_VALIDATE };

void vg_wh_review_as(enum vg_wh_mode mode, const char *body, size_t len,
                     const struct vg_wh_resources *res, const struct vg_wh_writers *w,
                     struct vg_wh_reply *out);
/* vg_wh_review_as(VG_WH_MUTATE, ...). */
void vg_wh_review(const char *body, size_t len, const struct vg_wh_resources *res,
                  const struct vg_wh_writers *w, struct vg_wh_reply *out);

const char *vg_wh_result_name(enum vg_wh_result r);

#endif

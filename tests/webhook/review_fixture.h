/*
 * review_fixture.h -- AdmissionReviews for tests/webhook: a Pod CREATE built
 * from a container list, and the JSONPatch of an answer applied back onto
 * the pod (RFC 6902 "add" on objects, which is all vgpu-webhook writes), so
 * that idempotence is tested by reviewing the patched pod again.
 */
#ifndef VG_WH_REVIEW_FIXTURE_H
#define VG_WH_REVIEW_FIXTURE_H

#include <json-c/json.h>

#include "writers.h"

/* {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":
 *  {"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},
 *   "operation":"CREATE","object":<pod>}} as text (malloc'd). */
char *fx_review(const char *pod_json);

/* The same review as a Pod UPDATE from old_json by user (request.userInfo
 * {"username": user, "groups": [...]}; no userInfo when user is NULL). */
char *fx_update_review(const char *old_json, const char *pod_json, const char *user);

/* The answer's response object (a new reference), asserting HTTP 200, the
 * same uid and application/json; with the default writers, or w. */
json_object *fx_response(const char *review_text);
json_object *fx_response_with(const char *review_text, const struct vg_wh_writers *w);

/* The decoded JSONPatch of a response, NULL if it has none. */
json_object *fx_patch(json_object *response);

/* pod_json with patch applied, as text (malloc'd). */
char *fx_apply(const char *pod_json, json_object *patch);

#endif

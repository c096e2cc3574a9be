/* review.c -- see review.h. */
#include "review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base64.h"
#include "decide.h"
#include "json_get.h"
#include "log.h"
#include "patch.h"

static const char *const result_names[VG_WH_R_COUNT] = {"allowed", "mutated", "refused", "invalid"};

const char *vg_wh_result_name(enum vg_wh_result r) {
  return r < VG_WH_R_COUNT ? result_names[r] : "?";
}

static void plain(struct vg_wh_reply *out, unsigned status, const char *msg) {
  out->status = status;
  out->content_type = "text/plain; charset=utf-8";
  out->result = VG_WH_R_INVALID;
  size_t n = strlen(msg);
  out->body = malloc(n + 2);
  if (out->body != NULL) {
    memcpy(out->body, msg, n);
    memcpy(out->body + n, "\n", 2);
  }
}

/* The whole body as one JSON object, or NULL with why (json_get.h: bytes
 * after the value, a top level that is not an object, a \u0000 in a string
 * that the checks here would read cut short). */
static json_object *parse(const char *body, size_t len, char *why, size_t why_len) {
  enum vg_json_bad bad;
  return vg_json_parse_object(body, len, "request body", &bad, why, why_len);
}

/* A Pod CREATE or UPDATE (not a subresource: a Binding or a status update
 * is not ours to decide) -- the operation, else NULL. */
static const char *pod_operation(json_object *req) {
  json_object *kind = vg_json_get(req, "kind");
  const char *group = vg_json_get_str(kind, "group"), *k = vg_json_get_str(kind, "kind");
  const char *op = vg_json_get_str(req, "operation"), *sub = vg_json_get_str(req, "subResource");
  if (k == NULL || strcmp(k, "Pod") != 0 || (group != NULL && *group != '\0') || op == NULL ||
      (sub != NULL && *sub != '\0'))
    return NULL;
  return strcmp(op, "CREATE") == 0 || strcmp(op, "UPDATE") == 0 ? op : NULL;
}

/* Fills resp (uid already in) from the decision; returns the result. */
static enum vg_wh_result answer(json_object *resp, const struct vg_wh_decision *d) {
  json_object_object_add(resp, "allowed", json_object_new_boolean(d->verdict != VG_WH_REFUSE));
  if (d->verdict == VG_WH_REFUSE) {
    json_object *st = json_object_new_object();
    json_object_object_add(st, "code", json_object_new_int(403));
    json_object_object_add(st, "reason", json_object_new_string("Forbidden"));
    char msg[VG_ERR_MAX + 8];
    snprintf(msg, sizeof(msg), "vgpu: %s", d->why);
    json_object_object_add(st, "message", json_object_new_string(msg));
    json_object_object_add(resp, "status", st);
    return VG_WH_R_REFUSED;
  }
  if (d->verdict == VG_WH_ALLOW) return VG_WH_R_ALLOWED;
  char *patch = vg_wh_patch(d);
  char *b64 = patch != NULL ? vg_base64_encode(patch, strlen(patch)) : NULL;
  free(patch);
  if (b64 == NULL) return VG_WH_R_INVALID;
  json_object_object_add(resp, "patchType", json_object_new_string("JSONPatch"));
  json_object_object_add(resp, "patch", json_object_new_string(b64));
  free(b64);
  if (d->set_scheduler && strcmp(d->original, VG_WH_DEFAULT_SCHEDULER) != 0) {
    /* someone chose another one */
    char w[400];
    snprintf(w, sizeof(w), "vgpu: spec.schedulerName %.100s replaced by %s (was kept in %s)",
             d->original, VG_WH_SCHEDULER, VG_WH_ORIGINAL_ANNOTATION);
    json_object *ws = json_object_new_array();
    json_object_array_add(ws, json_object_new_string(w));
    json_object_object_add(resp, "warnings", ws);
  }
  return VG_WH_R_MUTATED;
}

/* The user the API server authenticated (request.userInfo.username), or
 * NULL: the UPDATE guard names it and checks it against the writers. */
static const char *user_of(json_object *req) {
  return vg_json_get_str(vg_json_get(req, "userInfo"), "username");
}

/* The decision for a Pod CREATE or UPDATE (op) in mode. */
static void decide_pod(enum vg_wh_mode mode, const char *op, json_object *req,
                       const struct vg_wh_resources *res, const struct vg_wh_writers *w,
                       struct vg_wh_decision *d) {
  if (strcmp(op, "UPDATE") == 0)
    vg_wh_decide_update(vg_json_get(req, "oldObject"), vg_json_get(req, "object"), user_of(req), w,
                        d);
  else if (mode == VG_WH_VALIDATE)
    vg_wh_decide_create_guard(vg_json_get(req, "object"), d);
  else
    vg_wh_decide(vg_json_get(req, "object"), res, d);
}

static void decide_review(enum vg_wh_mode mode, const char *api_version, json_object *req,
                          const struct vg_wh_resources *res, const struct vg_wh_writers *w,
                          struct vg_wh_reply *out) {
  json_object *resp = json_object_new_object();
  json_object_object_add(resp, "uid", json_object_get(vg_json_get(req, "uid")));
  struct vg_wh_decision d = {.verdict = VG_WH_ALLOW};
  const char *op = pod_operation(req);
  if (op != NULL) decide_pod(mode, op, req, res, w, &d);
  out->result = answer(resp, &d);
  if (out->result == VG_WH_R_INVALID) {
    json_object_put(resp);
    plain(out, 500, "out of memory");
    return;
  }
  vg_debug("vgpu-webhook: %s %s/%s: %s", vg_wh_result_name(out->result),
           vg_json_get_str(req, "namespace") ? vg_json_get_str(req, "namespace") : "",
           vg_json_get_str(req, "name") ? vg_json_get_str(req, "name") : "", d.why);
  json_object *top = json_object_new_object();
  json_object_object_add(top, "apiVersion", json_object_new_string(api_version));
  json_object_object_add(top, "kind", json_object_new_string("AdmissionReview"));
  json_object_object_add(top, "response", resp);
  const char *text =
      json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  out->status = 200;
  out->content_type = "application/json";
  out->body = text != NULL ? strdup(text) : NULL;
  json_object_put(top);
}

void vg_wh_review(const char *body, size_t len, const struct vg_wh_resources *res,
                  const struct vg_wh_writers *w, struct vg_wh_reply *out) {
  vg_wh_review_as(VG_WH_MUTATE, body, len, res, w, out);
}

void vg_wh_review_as(enum vg_wh_mode mode, const char *body, size_t len,
                     const struct vg_wh_resources *res, const struct vg_wh_writers *w,
                     struct vg_wh_reply *out) {
  char why[256];
  memset(out, 0, sizeof(*out));
  if (len > VG_WH_MAX_BODY) {
    /* len may be only "over": the server refuses before reading the body. */
    snprintf(why, sizeof(why),
             "request body over the %u-byte limit (an AdmissionReview of one Pod)", VG_WH_MAX_BODY);
    return plain(out, 413, why);
  }
  json_object *review = parse(body, len, why, sizeof(why));
  if (review == NULL) return plain(out, 400, why);
  const char *api = vg_json_get_str(review, "apiVersion"), *kind = vg_json_get_str(review, "kind");
  json_object *req = vg_json_get(review, "request");
  const char *uid = vg_json_get_str(req, "uid");
  if (api == NULL ||
      (strcmp(api, "admission.k8s.io/v1") != 0 && strcmp(api, "admission.k8s.io/v1beta1") != 0))
    plain(out, 400, "not an AdmissionReview: apiVersion is not admission.k8s.io/v1");
  else if (kind == NULL || strcmp(kind, "AdmissionReview") != 0)
    plain(out, 400, "not an AdmissionReview: kind is not AdmissionReview");
  else if (uid == NULL || *uid == '\0')
    plain(out, 400, "AdmissionReview without request.uid: nothing to answer to");
  else
    decide_review(mode, api, req, res, w, out);
  json_object_put(review);
}

/* fuzz_webhook.c -- libFuzzer target for what vgpu-webhook reads: the body
 * of POST /mutate. The input is reviewed three times: as the whole body, as
 * the Pod of a well-formed Pod CREATE review, and as the old Pod of an UPDATE
 * (so that the decisions, not only the envelope, meet odd pods). Every answer must be a reply with
 * a body; a 200 must be an AdmissionReview carrying the uid, and a patch must decode to a JSON
 * array. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base64.h"
#include "json_get.h"
#include "review.h"

static void check(const struct vg_wh_reply *r) {
  if (r->body == NULL) abort();
  if (r->status != 200) {
    if (r->status != 400 && r->status != 413) abort();
    return;
  }
  json_object *top = json_tokener_parse(r->body);
  json_object *resp = vg_json_get(top, "response");
  if (resp == NULL || vg_json_get(resp, "uid") == NULL || vg_json_get(resp, "allowed") == NULL)
    abort();
  const char *patch = vg_json_get_str(resp, "patch");
  if (patch != NULL) {
    size_t len;
    char *text = vg_base64_decode(patch, &len);
    json_object *p = text != NULL ? json_tokener_parse(text) : NULL;
    if (p == NULL || !json_object_is_type(p, json_type_array)) abort();
    json_object_put(p);
    free(text);
  }
  json_object_put(top);
}

/* Heads of a well-formed review: the input follows as its Pod (the old one
 * of the UPDATE, by a user who may not change vgpu.io/assigned), then "}}". */
static const char create[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"operation\":\"CREATE\",\"object\":";
static const char update[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"alice\"},"
    "\"object\":{\"metadata\":{\"annotations\":{\"vgpu.io/assigned\":\"{}\"}}},\"oldObject\":";

static void review_wrapped(const char *head, const uint8_t *data, size_t size,
                           const struct vg_wh_resources *res, const struct vg_wh_writers *w) {
  size_t n = strlen(head);
  char *wrapped = malloc(n + size + 2);
  if (wrapped == NULL) return;
  memcpy(wrapped, head, n);
  memcpy(wrapped + n, data, size);
  memcpy(wrapped + n + size, "}}", 2);
  struct vg_wh_reply r;
  vg_wh_review(wrapped, n + size + 2, res, w, &r);
  check(&r);
  free(r.body);
  free(wrapped);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct vg_wh_resources res;
  static struct vg_wh_writers w;
  if (res.n == 0) vg_wh_resources_default(&res, NULL);
  vg_wh_writers_default(&w);
  struct vg_wh_reply r;
  vg_wh_review((const char *)data, size, &res, &w, &r);
  check(&r);
  free(r.body);
  review_wrapped(create, data, size, &res, &w);
  review_wrapped(update, data, size, &res, &w);
  return 0;
}

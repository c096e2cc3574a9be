/* fuzz_webhook.c -- libFuzzer target for what vgpu-webhook reads: the body
 * of POST /mutate. The input is reviewed twice: as the whole body, and as
 * the Pod of a well-formed Pod CREATE review (so that the decision, not only
 * the envelope, meets odd pods). Every answer must be a reply with a body;
 * a 200 must be an AdmissionReview carrying the uid, and a patch must decode
 * to a JSON array. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct vg_wh_resources res;
  if (res.n == 0 && vg_wh_resources_parse(vg_wh_default_resources, &res, NULL) != 0) abort();
  struct vg_wh_reply r;
  vg_wh_review((const char *)data, size, &res, &r);
  check(&r);
  free(r.body);
  static const char head[] =
      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
      "\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
      "\"operation\":\"CREATE\",\"object\":";
  size_t n = sizeof(head) - 1;
  char *wrapped = malloc(n + size + 2);
  if (wrapped == NULL) return 0;
  memcpy(wrapped, head, n);
  memcpy(wrapped + n, data, size);
  memcpy(wrapped + n + size, "}}", 2);
  vg_wh_review(wrapped, n + size + 2, &res, &r);
  check(&r);
  free(r.body);
  free(wrapped);
  return 0;
}

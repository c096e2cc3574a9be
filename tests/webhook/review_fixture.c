/* review_fixture.c -- see review_fixture.h. */
#include "review_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base64.h"
#include "json_get.h"
#include "resources.h"
#include "review.h"

char *fx_review(const char *pod_json) {
  const char *fmt =
      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
      "{\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
      "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
      "\"operation\":\"CREATE\",\"namespace\":\"ns\",\"object\":%s}}";
  char *out = NULL;
  assert_true(asprintf(&out, fmt, pod_json) > 0);
  return out;
}

char *fx_update_review(const char *old_json, const char *pod_json, const char *user) {
  char *base = fx_review(pod_json), *info = NULL, *out = NULL;
  const char *create = "\"operation\":\"CREATE\"", *at = strstr(base, create);
  assert_non_null(at);
  /* groups as the API server sends them: the webhook must not read them */
  if (user != NULL)
    assert_true(asprintf(&info,
                         ",\"userInfo\":{\"username\":\"%s\",\"uid\":\"x\",\"groups\":"
                         "[\"system:serviceaccounts\",\"system:authenticated\"]}",
                         user) > 0);
  assert_true(asprintf(&out, "%.*s\"operation\":\"UPDATE\"%s,\"oldObject\":%s%s", (int)(at - base),
                       base, info != NULL ? info : "", old_json, at + strlen(create)) > 0);
  free(info);
  free(base);
  return out;
}

json_object *fx_response(const char *review_text) {
  struct vg_wh_writers w = {0};
  vg_wh_writers_default(&w);
  return fx_response_with(review_text, &w);
}

json_object *fx_response_with(const char *review_text, const struct vg_wh_writers *w) {
  struct vg_wh_resources res;
  vg_wh_resources_default(&res, NULL);
  struct vg_wh_reply r;
  vg_wh_review(review_text, strlen(review_text), &res, w, &r);
  assert_int_equal(r.status, 200);
  assert_string_equal(r.content_type, "application/json");
  json_object *top = json_tokener_parse(r.body);
  free(r.body);
  assert_non_null(top);
  assert_string_equal(vg_json_get_str(top, "apiVersion"), "admission.k8s.io/v1");
  assert_string_equal(vg_json_get_str(top, "kind"), "AdmissionReview");
  json_object *resp = json_object_get(vg_json_get(top, "response"));
  json_object_put(top);
  assert_string_equal(vg_json_get_str(resp, "uid"), "u-1");
  return resp;
}

json_object *fx_patch(json_object *response) {
  const char *b64 = vg_json_get_str(response, "patch");
  if (b64 == NULL) return NULL;
  assert_string_equal(vg_json_get_str(response, "patchType"), "JSONPatch");
  size_t len;
  char *text = vg_base64_decode(b64, &len);
  assert_non_null(text);
  json_object *p = json_tokener_parse(text);
  free(text);
  assert_true(json_object_is_type(p, json_type_array));
  return p;
}

/* One reference token, "~1" -> '/', "~0" -> '~'. */
static void unescape(const char *tok, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (tok[i] == '~' && i + 1 < n)
      out[o++] = tok[++i] == '1' ? '/' : '~';
    else
      out[o++] = tok[i];
  }
  out[o] = '\0';
}

static void apply_add(json_object *doc, const char *path, json_object *value) {
  json_object *at = doc;
  char key[512];
  assert_true(path[0] == '/');
  for (const char *p = path + 1;;) {
    const char *slash = strchr(p, '/');
    size_t n = slash != NULL ? (size_t)(slash - p) : strlen(p);
    unescape(p, n, key);
    assert_true(json_object_is_type(at, json_type_object)); /* the path must resolve */
    if (slash == NULL) {
      json_object_object_add(at, key, json_object_get(value));
      return;
    }
    at = vg_json_get(at, key);
    assert_non_null(at);
    p = slash + 1;
  }
}

char *fx_apply(const char *pod_json, json_object *patch) {
  json_object *doc = json_tokener_parse(pod_json);
  assert_non_null(doc);
  for (size_t i = 0; i < json_object_array_length(patch); i++) {
    json_object *op = json_object_array_get_idx(patch, i);
    assert_string_equal(vg_json_get_str(op, "op"), "add");
    apply_add(doc, vg_json_get_str(op, "path"), vg_json_get(op, "value"));
  }
  char *out = strdup(
      json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(doc);
  return out;
}

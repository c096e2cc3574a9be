/*
 * test_resize.c -- the resize annotations (src/k8s/resize.c): what parses,
 * what is refused and with which words, and a pod's view of them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resize.h"

static void refused(const char *text, const char *words) {
  struct vg_resize_request r;
  struct vg_err err = {""};
  assert_int_equal(vg_resize_request_parse(text, &r, &err), -1);
  if (strstr(err.msg, words) == NULL) fail_msg("\"%s\": \"%s\" lacks \"%s\"", text, err.msg, words);
}

static void test_request(void **s) {
  (void)s;
  struct vg_resize_request r;
  struct vg_err err = {""};
  assert_int_equal(vg_resize_request_parse("{\"id\":\"a1\",\"container\":\"main\",\"memory\":"
                                           "3145728000,\"cores\":30,\"later\":true}",
                                           &r, &err),
                   0);
  assert_string_equal(r.id, "a1");
  assert_string_equal(r.container, "main");
  assert_int_equal(r.memory, 3145728000LL);
  assert_int_equal(r.cores, 30);
  assert_int_equal(
      vg_resize_request_parse("{\"id\":\"a\",\"container\":\"c\",\"cores\":0}", &r, &err), 0);
  assert_int_equal(r.memory, -1); /* unchanged */
  assert_int_equal(r.cores, 0);   /* no compute limit */
  char *text = vg_resize_request_format(&r);
  assert_string_equal(text, "{\"id\":\"a\",\"container\":\"c\",\"cores\":0}");
  free(text);
}

static void test_request_refusals(void **s) {
  (void)s;
  refused("", "not JSON");
  refused("[1]", "not a JSON object");
  refused("{\"container\":\"c\",\"memory\":1}", "\"id\" is missing");
  refused("{\"id\":\"a\",\"memory\":1}", "\"container\" is missing");
  refused("{\"id\":\"a\",\"container\":\"c\"}", "neither memory nor cores");
  refused("{\"id\":\"a\",\"container\":\"c\",\"memory\":0}", "\"memory\" is 0");
  refused("{\"id\":\"a\",\"container\":\"c\",\"memory\":\"3g\"}", "not an integer");
  refused("{\"id\":\"a\",\"container\":\"c\",\"cores\":101}", "\"cores\" is 101");
  refused("{\"id\":\"a\",\"container\":\"c\",\"cores\":-1}", "\"cores\" is -1");
  refused("{\"id\":\"a\\n\",\"container\":\"c\",\"cores\":1}", "control character");
  refused("{\"id\":\"\",\"container\":\"c\",\"cores\":1}", "empty or too long");
  char big[200];
  snprintf(big, sizeof(big), "{\"id\":\"a\",\"container\":\"%070d\",\"cores\":1}", 0);
  refused(big, "\"container\" is empty or too long");
}

static void test_status_and_ack(void **s) {
  (void)s;
  struct vg_resize_status st;
  struct vg_err err = {""};
  assert_int_equal(vg_resize_status_parse(
                       "{\"id\":\"a\",\"phase\":\"Refused\",\"reason\":\"no room\"}", &st, &err),
                   0);
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  assert_string_equal(st.reason, "no room");
  assert_int_equal(vg_resize_status_parse("{\"id\":\"a\",\"phase\":\"Done\"}", &st, &err), -1);
  assert_non_null(strstr(err.msg, "none of Accepted, Applied, Refused"));
  assert_int_equal(
      vg_resize_status_parse("{\"id\":\"a\",\"phase\":\"Applied\",\"reason\":1}", &st, &err), -1);
  char id[VG_RESIZE_ID_MAX];
  assert_int_equal(vg_resize_node_parse("{\"id\":\"a7\"}", id, &err), 0);
  assert_string_equal(id, "a7");
  assert_int_equal(vg_resize_node_parse("{\"id\":7}", id, &err), -1);
}

static void status_refused(const char *text, const char *words) {
  struct vg_resize_status st;
  struct vg_err err = {""};
  assert_int_equal(vg_resize_status_parse(text, &st, &err), -1);
  if (strstr(err.msg, words) == NULL) fail_msg("\"%s\": \"%s\" lacks \"%s\"", text, err.msg, words);
}

static void ack_refused(const char *text, const char *words) {
  char id[VG_RESIZE_ID_MAX];
  struct vg_err err = {""};
  assert_int_equal(vg_resize_node_parse(text, id, &err), -1);
  if (strstr(err.msg, words) == NULL) fail_msg("\"%s\": \"%s\" lacks \"%s\"", text, err.msg, words);
}

/* Every way the status and the acknowledgement are refused, each naming the
 * annotation and the field; and both writers' texts read back. */
static void test_status_and_ack_refusals(void **s) {
  (void)s;
  status_refused("", VG_RESIZE_STATUS_ANNOTATION " is not JSON");
  status_refused("\"Refused\"", VG_RESIZE_STATUS_ANNOTATION " is not a JSON object");
  status_refused("{\"phase\":\"Refused\"}", "\"id\" is missing or not a string");
  status_refused("{\"id\":4,\"phase\":\"Refused\"}", "\"id\" is missing or not a string");
  status_refused("{\"id\":\"\",\"phase\":\"Refused\"}", "\"id\" is empty or too long");
  status_refused("{\"id\":\"a\\t\",\"phase\":\"Refused\"}", "\"id\" has a control character");
  status_refused("{\"id\":\"a\"}", "\"phase\" is missing or not a string");
  status_refused("{\"id\":\"a\",\"phase\":\"AcceptedAndApplied\"}",
                 "\"phase\" is empty or too long");
  status_refused("{\"id\":\"a\",\"phase\":\"accepted\"}", "none of Accepted, Applied, Refused");
  status_refused("{\"id\":\"a\",\"phase\":\"Applied\",\"reason\":[]}",
                 "\"reason\" is not a string");
  ack_refused("{", VG_RESIZE_NODE_ANNOTATION " is not JSON");
  ack_refused("[]", VG_RESIZE_NODE_ANNOTATION " is not a JSON object");
  ack_refused("{}", "\"id\" is missing or not a string");
  ack_refused("{\"id\":\"\"}", "\"id\" is empty or too long");
  ack_refused("{\"id\":\"a\\u007f\"}", "\"id\" has a control character");
  char big[200];
  snprintf(big, sizeof(big), "{\"id\":\"%070d\"}", 0);
  ack_refused(big, "\"id\" is empty or too long");
  /* The writers' texts read back. */
  char id[VG_RESIZE_ID_MAX];
  struct vg_err err = {""};
  char *text = vg_resize_node_format("r5");
  assert_int_equal(vg_resize_node_parse(text, id, &err), 0);
  assert_string_equal(id, "r5");
  free(text);
  struct vg_resize_status st = {.phase = VG_RESIZE_APPLIED}, back;
  snprintf(st.id, sizeof(st.id), "r5");
  text = vg_resize_status_format(&st);
  assert_string_equal(text, "{\"id\":\"r5\",\"phase\":\"Applied\",\"reason\":\"\"}");
  assert_int_equal(vg_resize_status_parse(text, &back, &err), 0);
  assert_int_equal(back.phase, VG_RESIZE_APPLIED);
  free(text);
  assert_string_equal(vg_resize_phase_name((enum vg_resize_phase)7), "?");
}

/* The status a party puts into its patch reads back as written. */
static void test_status_put(void **s) {
  (void)s;
  json_object *ann = json_object_new_object();
  assert_int_equal(vg_resize_status_put(ann, "r9", VG_RESIZE_REFUSED, "node n1: 3 GiB held"), 0);
  const char *text =
      json_object_get_string(json_object_object_get(ann, VG_RESIZE_STATUS_ANNOTATION));
  struct vg_resize_status st;
  struct vg_err err = {""};
  assert_int_equal(vg_resize_status_parse(text, &st, &err), 0);
  assert_string_equal(st.id, "r9");
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  assert_string_equal(st.reason, "node n1: 3 GiB held");
  json_object_put(ann);
}

static void test_view(void **s) {
  (void)s;
  json_object *pod = json_tokener_parse(
      "{\"metadata\":{\"labels\":{\"vgpu.io/resize\":\"requested\"},\"annotations\":{"
      "\"vgpu.io/resize-request\":\"{\\\"id\\\":\\\"r2\\\",\\\"container\\\":\\\"c\\\","
      "\\\"memory\\\":5}\",\"vgpu.io/resize-node\":\"{\\\"id\\\":\\\"r1\\\"}\","
      "\"vgpu.io/resize-status\":\"garbage\"}}}");
  struct vg_resize_view v;
  struct vg_err err = {""};
  vg_resize_view_of(pod, &v, &err);
  assert_true(v.open && v.has_request && !v.bad_request && v.has_node && !v.bad_node);
  assert_string_equal(v.request.id, "r2");
  assert_string_equal(v.node_id, "r1"); /* an earlier request's */
  assert_true(v.has_status && v.bad_status);
  assert_non_null(strstr(err.msg, VG_RESIZE_STATUS_ANNOTATION));
  json_object_put(pod);
  char a[VG_RESIZE_ID_MAX], b[VG_RESIZE_ID_MAX];
  vg_resize_new_id(a);
  vg_resize_new_id(b);
  assert_string_not_equal(a, b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request),        cmocka_unit_test(test_request_refusals),
      cmocka_unit_test(test_status_and_ack), cmocka_unit_test(test_status_put),
      cmocka_unit_test(test_view),           cmocka_unit_test(test_status_and_ack_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

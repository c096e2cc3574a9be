/* test_assignment.c -- the vgpu.io/assigned annotation: what the parser
 * accepts, every way it refuses (with the field named), and that what the
 * writer produces is read back unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "assignment.h"

#define GOOD                                                                              \
  "{\"version\":1,\"node\":\"node-a\",\"containers\":["                                   \
  "{\"name\":\"main\",\"resource\":\"nvidia.com/vgpu\",\"gpus\":["                        \
  "{\"uuid\":\"GPU-0\",\"index\":0,\"memory\":3145728000,\"cores\":30},"                  \
  "{\"uuid\":\"GPU-1\",\"index\":1,\"memory\":3145728000,\"cores\":30}]},"                \
  "{\"name\":\"side\",\"resource\":\"nvidia.com/vgpu\",\"gpus\":["                        \
  "{\"uuid\":\"GPU-1\",\"index\":1,\"memory\":1048576,\"cores\":0,\"future\":\"ok\"}]}]," \
  "\"later\":{\"ignored\":true}}"

static void test_parses_good(void **state) {
  (void)state;
  struct vg_assignment a;
  struct vg_err err = {""};
  assert_int_equal(vg_assign_parse(GOOD, &a, &err), 0);
  assert_string_equal(a.node, "node-a");
  assert_int_equal(a.nctrs, 2);
  assert_string_equal(a.ctr[0].name, "main");
  assert_int_equal(a.ctr[0].ngpus, 2);
  assert_string_equal(a.ctr[0].gpu[1].uuid, "GPU-1");
  assert_int_equal(a.ctr[0].gpu[1].memory, 3145728000LL);
  assert_int_equal(a.ctr[0].gpu[1].cores, 30);
  assert_int_equal(a.ctr[1].gpu[0].memory, 1048576);
  const struct vg_assign_ctr *c = vg_assign_find(&a, "side", "nvidia.com/vgpu");
  assert_non_null(c);
  assert_string_equal(c->name, "side");
  assert_null(vg_assign_find(&a, "side", "aliyun.com/gpu-mem"));
  assert_null(vg_assign_find(&a, "other", "nvidia.com/vgpu"));
  vg_assign_free(&a);
}

/* Each bad text and a piece of the message it must give. */
static const struct {
  const char *text, *says;
} bad[] = {
    {"", "not JSON"},
    {"{", "not JSON"},
    {"{} x", "not JSON"},
    {"[]", "not a JSON object"},
    {"{\"node\":\"n\",\"containers\":[]}", "no \"version\""},
    {"{\"version\":\"1\",\"node\":\"n\",\"containers\":[]}", "\"version\" is not an integer"},
    {"{\"version\":2,\"node\":\"n\",\"containers\":[]}", "version 2, this reader knows version 1"},
    {"{\"version\":1,\"containers\":[]}", "no \"node\""},
    {"{\"version\":1,\"node\":\"\",\"containers\":[]}", "\"node\" is empty"},
    {"{\"version\":1,\"node\":\"n\"}", "\"containers\" is missing"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":{}}", "\"containers\" is not an array"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[7]}", "containers[0] is not an object"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"resource\":\"r\",\"gpus\":[]}]}",
     "containers[0]: no \"name\""},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"gpus\":[]}]}",
     "containers[0]: no \"resource\""},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\"}]}",
     "\"gpus\" is missing"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":[]}"
     "]"
     "}",
     "0 GPUs, not 1..16"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":["
     "{\"index\":0,\"memory\":1,\"cores\":0}]}]}",
     "container c: gpus[0]: no \"uuid\""},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":["
     "{\"uuid\":\"G\",\"index\":0,\"memory\":0,\"cores\":0}]}]}",
     "\"memory\" is 0, not within 1.."},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":["
     "{\"uuid\":\"G\",\"index\":0,\"memory\":1.5,\"cores\":0}]}]}",
     "\"memory\" is not an integer"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":["
     "{\"uuid\":\"G\",\"index\":0,\"memory\":1,\"cores\":101}]}]}",
     "\"cores\" is 101, not within 0..100"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":["
     "{\"uuid\":\"G\",\"index\":-1,\"memory\":1,\"cores\":1}]}]}",
     "\"index\" is -1"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\",\"gpus\":["
     "{\"uuid\":\"G\",\"index\":0,\"memory\":1,\"cores\":1},"
     "{\"uuid\":\"G\",\"index\":0,\"memory\":1,\"cores\":1}]}]}",
     "GPU G assigned twice"},
    {"{\"version\":1,\"node\":\"n\",\"containers\":["
     "{\"name\":\"c\",\"resource\":\"r\",\"gpus\":[{\"uuid\":\"G\",\"index\":0,\"memory\":1,"
     "\"cores\":1}]},"
     "{\"name\":\"c\",\"resource\":\"r\",\"gpus\":[{\"uuid\":\"H\",\"index\":0,\"memory\":1,"
     "\"cores\":1}]}]}",
     "container c (r) appears twice"},
};

static void test_refuses_bad(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct vg_assignment a;
    struct vg_err err = {""};
    int rc = vg_assign_parse(bad[i].text, &a, &err);
    if (rc == 0 || strstr(err.msg, bad[i].says) == NULL)
      fail_msg("case %zu: %s -> rc %d, \"%s\" (wanted \"%s\")", i, bad[i].text, rc, err.msg,
               bad[i].says);
    assert_null(a.ctr); /* nothing half-parsed survives */
  }
}

static void test_long_uuid_refused(void **state) {
  (void)state;
  char uuid[200], text[600];
  memset(uuid, 'x', sizeof(uuid) - 1);
  uuid[sizeof(uuid) - 1] = '\0';
  snprintf(text, sizeof(text),
           "{\"version\":1,\"node\":\"n\",\"containers\":[{\"name\":\"c\",\"resource\":\"r\","
           "\"gpus\":[{\"uuid\":\"%s\",\"index\":0,\"memory\":1,\"cores\":1}]}]}",
           uuid);
  struct vg_assignment a;
  struct vg_err err = {""};
  assert_int_equal(vg_assign_parse(text, &a, &err), -1);
  assert_non_null(strstr(err.msg, "\"uuid\" is longer than 95 bytes"));
}

static void test_round_trip(void **state) {
  (void)state;
  struct vg_assignment a = {{0}, 0, NULL};
  snprintf(a.node, sizeof(a.node), "node-x");
  struct vg_assign_ctr *c = vg_assign_add_ctr(&a, "train", "nvidia.com/vgpu");
  assert_non_null(c);
  c->gpu[c->ngpus++] = (struct vg_assign_gpu){"GPU-abc", 3, 12884901888LL, 100};
  struct vg_err err = {""};
  json_object *o = vg_assign_to_json(&a, &err);
  assert_non_null(o);
  struct vg_assignment b;
  assert_int_equal(
      vg_assign_parse(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), &b, &err), 0);
  assert_string_equal(b.node, "node-x");
  assert_int_equal(b.nctrs, 1);
  assert_string_equal(b.ctr[0].gpu[0].uuid, "GPU-abc");
  assert_int_equal(b.ctr[0].gpu[0].index, 3);
  assert_int_equal(b.ctr[0].gpu[0].memory, 12884901888LL);
  assert_int_equal(b.ctr[0].gpu[0].cores, 100);
  json_object_put(o);
  vg_assign_free(&b);
  /* The writer refuses what readers would refuse. */
  c = &a.ctr[0];
  c->gpu[0].cores = 130;
  assert_null(vg_assign_to_json(&a, &err));
  assert_non_null(strstr(err.msg, "\"cores\" is 130"));
  vg_assign_free(&a);
}

static void test_from_pod(void **state) {
  (void)state;
  struct vg_assignment a;
  struct vg_err err = {""};
  json_object *pod = json_tokener_parse("{\"metadata\":{\"name\":\"p\"}}");
  assert_int_equal(vg_assign_from_pod(pod, &a, &err), 0);
  json_object_put(pod);
  pod = json_tokener_parse("{\"metadata\":{\"annotations\":{\"vgpu.io/assigned\":5}}}");
  assert_int_equal(vg_assign_from_pod(pod, &a, &err), -1);
  assert_string_equal(err.msg, "annotation vgpu.io/assigned: not a string");
  json_object_put(pod);
  json_object *ann = json_object_new_object();
  json_object_object_add(ann, VG_ASSIGNED_ANNOTATION, json_object_new_string(GOOD));
  json_object *meta = json_object_new_object();
  json_object_object_add(meta, "annotations", ann);
  pod = json_object_new_object();
  json_object_object_add(pod, "metadata", meta);
  assert_int_equal(vg_assign_from_pod(pod, &a, &err), 1);
  assert_int_equal(a.nctrs, 2);
  vg_assign_free(&a);
  json_object_put(pod);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parses_good),       cmocka_unit_test(test_refuses_bad),
      cmocka_unit_test(test_long_uuid_refused), cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_from_pod),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

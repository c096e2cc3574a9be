/*
 * test_scheduler_renamed.c -- vgpu-scheduler with resources renamed as the
 * device plugin's configuration allows (`vgpu.resourceMem: example.com/vram`,
 * given to the extender as --resource vgpu.resourceMem=example.com/vram):
 * the renamed memory is read, fitted and written in the assignment; the old
 * default name is then no vgpu resource any more. Before the dialect table
 * (common/dialect.h) the extender knew only the default names, ignored
 * example.com/vram and gave the pod the whole GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "ext_harness.h"

#define A100 "NVIDIA A100-SXM4-16GB"
#define VGPU16                                                                             \
  "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"unit\":0,\"memory\":" \
  "17179869184,\"cores\":100}]"
#define GPU_GS                                                                         \
  "[{\"name\":\"example.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,\"unit\":" \
  "1073741824}]"

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  ext_add_node("ren-a", 1, 16, A100, VGPU16, 0);
  ext_add_node("ren-b", 1, 16, A100, VGPU16, 0);
  ext_add_node("ren-gs", 1, 16, A100, GPU_GS, 0);
  static const char *const extra[] = {"--resource", "vgpu.resourceMem=example.com/vram",
                                      "--resource", "gpushare.resourceName=example.com/gpu-mem",
                                      NULL};
  return ext_sched_start(extra);
}

static json_object *filter(const char *limits, const char *names) {
  char *pod = ext_pod_json("probe", limits, NULL, NULL, NULL);
  char *body = ext_args_names(pod, names);
  json_object *res = ext_post("/filter", body, 200);
  free(body);
  free(pod);
  return res;
}

/* The renamed memory is the pod's memory per GPU: it fits within the GPU, is
 * written in the assignment, and counts against what others may take. */
static void test_renamed_memory_placed(void **s) {
  (void)s;
  json_object *res = filter("\"nvidia.com/vgpu\":\"1\",\"example.com/vram\":\"3000\"", "\"ren-a\"");
  assert_true(ext_has_name(res, "ren-a"));
  json_object_put(res);
  ext_add_pod("vram", "\"nvidia.com/vgpu\":\"1\",\"example.com/vram\":\"3000\"", NULL, NULL, NULL);
  json_object *b = ext_bind("vram", "ren-a");
  assert_string_equal(ext_bind_error(b), "");
  json_object_put(b);
  char *a = ext_assigned("vram");
  ext_expect_contains(a, "\"memory\":3145728000"); /* 3000 MiB, not the whole 16 GiB */
  free(a);
  /* 14000 MiB more does not fit beside the 3000 on the 16 GiB GPU. */
  res = filter("\"nvidia.com/vgpu\":\"1\",\"example.com/vram\":\"14000\"", "\"ren-a\"");
  assert_false(ext_has_name(res, "ren-a"));
  json_object_put(res);
  res = filter("\"nvidia.com/vgpu\":\"1\",\"example.com/vram\":\"14000\"", "\"ren-b\"");
  assert_true(ext_has_name(res, "ren-b"));
  json_object_put(res);
}

/* The renamed memory follows the vgpu rules by role: 0 and a fraction are
 * refused naming the configured name. */
static void test_renamed_memory_rules(void **s) {
  (void)s;
  json_object *res = filter("\"nvidia.com/vgpu\":\"1\",\"example.com/vram\":\"0\"", "\"ren-b\"");
  ext_expect_refused(res, "ren-b", "example.com/vram is 0");
  json_object_put(res);
  res = filter("\"example.com/vram\":\"100\"", "\"ren-b\"");
  ext_expect_refused(res, "ren-b", "example.com/vram");
  json_object_put(res);
}

/* The old default name is no vgpu resource once renamed: refused, not
 * taken for memory. */
static void test_default_name_unknown(void **s) {
  (void)s;
  json_object *res =
      filter("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3000\"", "\"ren-b\"");
  ext_expect_refused(res, "ren-b", "nvidia.com/gpumem is not supported");
  json_object_put(res);
}

/* A renamed gpushare resource is placed as gpushare units. */
static void test_renamed_gpushare(void **s) {
  (void)s;
  ext_add_pod("gs", "\"example.com/gpu-mem\":\"4\"", NULL, NULL, NULL);
  json_object *b = ext_bind("gs", "ren-gs");
  assert_string_equal(ext_bind_error(b), "");
  json_object_put(b);
  char *a = ext_assigned("gs");
  ext_expect_contains(a, "\"resource\":\"example.com/gpu-mem\"");
  ext_expect_contains(a, "\"memory\":4294967296");
  free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_renamed_memory_placed),
      cmocka_unit_test(test_renamed_memory_rules),
      cmocka_unit_test(test_default_name_unknown),
      cmocka_unit_test(test_renamed_gpushare),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}

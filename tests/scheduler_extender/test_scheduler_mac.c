/*
 * test_scheduler_mac.c -- vgpu-scheduler --assignment-key against the fake
 * API server: bind writes vgpu.io/assigned-mac beside vgpu.io/assigned and
 * it verifies (assignment_mac.h) for the pod and node, not for another
 * node; a resize of a signed assignment is signed again; one of a forged
 * assignment is refused rather than signed; with the key file gone a bind
 * fails with the reason instead of writing an unsigned assignment; and a
 * short key file stops the program at start with a clear error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "assignment.h"
#include "assignment_mac.h"
#include "ext_harness.h"
#include "harness.h"
#include "resize.h"

#define GPU "GPU-node-m-0"

static char g_dir[] = "/tmp/vgpu-sched-mac-XXXXXX";
static char g_key[64];
static struct vg_assign_key *g_akey;

static void write_key(const char *path, size_t n) {
  unsigned char bytes[64];
  for (size_t i = 0; i < sizeof(bytes); i++) bytes[i] = (unsigned char)(i * 37 + 11);
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) abort();
}

static int setup(void **state) {
  (void)state;
  if (mkdtemp(g_dir) == NULL || ext_api_start() != 0) return -1;
  snprintf(g_key, sizeof(g_key), "%s/key", g_dir);
  write_key(g_key, 32);
  struct vg_err err = {{0}};
  if ((g_akey = vg_assign_key_open(g_key, &err)) == NULL) return -1;
  ext_add_node("node-m", 1, 8, "NVIDIA H100 (vgpu-sim)",
               "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"unit\":0,"
               "\"memory\":8589934592,\"cores\":100}]",
               0);
  static const char *const extra[] = {"--resize-poll-ms", "50", "--assignment-key", g_key, NULL};
  return ext_sched_start(extra);
}

static int teardown(void **state) {
  ext_teardown(state);
  vg_assign_key_free(g_akey);
  unlink(g_key);
  rmdir(g_dir);
  return 0;
}

static enum vg_assign_trust trust_of(const char *name, const char *node) {
  json_object *pod = ext_get_pod(name);
  struct vg_err err = {{0}};
  enum vg_assign_trust t = vg_assign_verify_pod(g_akey, pod, node, &err);
  json_object_put(pod);
  return t;
}

static void test_bind_signs(void **s) {
  (void)s;
  ext_add_pod("web", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\"", NULL, NULL, NULL);
  json_object *res = ext_bind("web", "node-m");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  assert_int_equal(trust_of("web", "node-m"), VG_ASSIGN_SIGNED);
  assert_int_equal(trust_of("web", NULL), VG_ASSIGN_SIGNED); /* spec.nodeName */
  assert_int_equal(trust_of("web", "node-x"), VG_ASSIGN_FORGED);
}

/* The resized assignment is signed again: the old MAC would not verify. */
static void test_resize_signs_again(void **s) {
  (void)s;
  ext_resize_ask("web", "r1", 2 * EXT_GIB, -1, true);
  struct vg_resize_status st = ext_resize_wait_status("web", "r1");
  assert_int_equal(st.phase, VG_RESIZE_ACCEPTED);
  json_object *after = ext_get_pod("web");
  struct vg_assignment a;
  assert_int_equal(vg_assign_from_pod(after, &a, NULL), 1);
  assert_int_equal(a.ctr[0].gpu[0].memory, 2 * EXT_GIB);
  vg_assign_free(&a);
  json_object_put(after);
  assert_int_equal(trust_of("web", "node-m"), VG_ASSIGN_SIGNED);
}

/* A bound pod whose assignment nobody signed (written while the webhook
 * was down): its resize is refused, and nothing signs the forgery. */
static void test_resize_of_forgery_refused(void **s) {
  (void)s;
  static const char forged[] =
      "{\"version\":1,\"node\":\"node-m\",\"containers\":[{\"name\":\"main\",\"resource\":"
      "\"nvidia.com/vgpu\",\"gpus\":[{\"uuid\":\"" GPU
      "\",\"index\":0,\"memory\":1073741824,"
      "\"cores\":0}]}]}";
  ext_add_pod("forged", "\"nvidia.com/vgpu\":\"1\"", NULL, "node-m", forged);
  ext_resize_ask("forged", "f1", 4 * EXT_GIB, -1, true);
  struct vg_resize_status st = ext_resize_wait_status("forged", "f1");
  assert_int_equal(st.phase, VG_RESIZE_REFUSED);
  if (strstr(st.reason, "was not signed by vgpu-scheduler (vgpu.io/assigned-mac missing)") == NULL)
    fail_msg("reason: %s", st.reason);
  assert_int_equal(trust_of("forged", "node-m"), VG_ASSIGN_UNSIGNED);
  char *text = ext_assigned("forged");
  assert_string_equal(text, forged);
  free(text);
}

/* The key file unreadable after start: binds fail, saying why. */
static void test_bind_without_key_fails(void **s) {
  (void)s;
  assert_int_equal(unlink(g_key), 0);
  ext_add_pod("late", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"512\"", NULL, NULL, NULL);
  json_object *res = ext_bind("late", "node-m");
  const char *e = ext_bind_error(res);
  if (strstr(e, "cannot sign vgpu.io/assigned") == NULL || strstr(e, g_key) == NULL)
    fail_msg("bind error: %s", e);
  json_object_put(res);
  char *text = ext_assigned("late");
  assert_null(text); /* nothing written: the pod is still unbound */
  write_key(g_key, 32);
  res = ext_bind("late", "node-m");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  assert_int_equal(trust_of("late", "node-m"), VG_ASSIGN_SIGNED);
}

static void test_short_key_refused_at_start(void **s) {
  (void)s;
  char path[96];
  snprintf(path, sizeof(path), "%s/short", g_dir);
  write_key(path, 16);
  struct vg_env env;
  vg_env_init(&env, false);
  char *argv[] = {(char *)vg_build_path("bin/vgpu-scheduler"),
                  "--listen",
                  "127.0.0.1:0",
                  "--assignment-key",
                  path,
                  NULL};
  static struct vg_run run;
  assert_int_equal(vg_run(&env, argv, &run), 2);
  if (strstr(run.err, "--assignment-key: assignment key ") == NULL ||
      strstr(run.err, "holds 16 bytes; it needs at least 32 random bytes") == NULL)
    fail_msg("stderr: %s", run.err);
  vg_env_cleanup(&env);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bind_signs),
      cmocka_unit_test(test_resize_signs_again),
      cmocka_unit_test(test_resize_of_forgery_refused),
      cmocka_unit_test(test_bind_without_key_fails),
      cmocka_unit_test(test_short_key_refused_at_start),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_assignment_mac.c -- vgpu.io/assigned-mac (src/k8s/assignment_mac.h):
 * a known-answer vector computed apart from our code (Python's hmac over
 * the documented message), every signed field changing the MAC, the
 * comparison going through GnuTLS's constant-time gnutls_memcmp (the test
 * wraps it with the linker's --wrap and counts), the key file's errors and
 * re-reading, and a pod's verdicts: signed, unsigned, forged, copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <json-c/json.h>

#include "assignment.h"
#include "assignment_mac.h"

/* ---- gnutls_memcmp, counted (-Wl,--wrap=gnutls_memcmp) ---- */

int __real_gnutls_memcmp(const void *a, const void *b, size_t n);
static int g_memcmp_calls;
static size_t g_memcmp_len;
int __wrap_gnutls_memcmp(const void *a, const void *b, size_t n);
int __wrap_gnutls_memcmp(const void *a, const void *b, size_t n) {
  g_memcmp_calls++;
  g_memcmp_len = n;
  return __real_gnutls_memcmp(a, b, n);
}

#define ASSIGNED                                                                                   \
  "{\"version\":1,\"node\":\"node1\",\"containers\":[{\"name\":\"c\",\"resource\":"                \
  "\"nvidia.com/vgpu\",\"gpus\":[{\"uuid\":\"GPU-0\",\"index\":0,\"memory\":1048576000,\"cores\":" \
  "30}]}]}"
#define UID "0d1f4a52-6f3b-4c1e-9a7d-2b8e5c0f1a93"
/* Python: hmac.new(bytes(range(32)), message, hashlib.sha256).hexdigest() */
#define KAT_MAC "v1:63acc871bcaeb97abf4e333398f20ef0585ba8866c4e7f853c53bcea48927f27"

static unsigned char g_key[32];
static char g_dir[] = "/tmp/vgpu-mac-XXXXXX";
static char g_path[64];

static int setup(void **state) {
  (void)state;
  for (int i = 0; i < 32; i++) g_key[i] = (unsigned char)i;
  if (mkdtemp(g_dir) == NULL) return -1;
  snprintf(g_path, sizeof(g_path), "%s/key", g_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(g_path);
  rmdir(g_dir);
  return 0;
}

static void write_key(const void *bytes, size_t n) {
  /* A new file (new inode), as a Secret volume's update swaps a symlink. */
  char tmp[80];
  snprintf(tmp, sizeof(tmp), "%s/.new", g_dir);
  FILE *f = fopen(tmp, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, g_path), 0);
}

static const struct vg_assign_subject g_subject = {UID, "default", "train", "node1", ASSIGNED};

static void test_message_is_length_prefixed(void **state) {
  (void)state;
  size_t len;
  char *m = vg_assign_mac_message(&g_subject, &len);
  assert_non_null(m);
  static const char want[] = "v1\n36:" UID "\n7:default\n5:train\n5:node1\n152:" ASSIGNED "\n";
  assert_int_equal(len, sizeof(want) - 1);
  assert_memory_equal(m, want, len);
  free(m);
  struct vg_assign_subject missing = g_subject;
  missing.uid = NULL;
  assert_null(vg_assign_mac_message(&missing, &len));
}

static void test_known_answer(void **state) {
  (void)state;
  char mac[VG_ASSIGN_MAC_TEXT_MAX];
  struct vg_err err = {""};
  assert_int_equal(vg_assign_mac_with(g_key, sizeof(g_key), &g_subject, mac, &err), 0);
  assert_string_equal(mac, KAT_MAC);
}

/* Each field alone, and moving bytes between fields, gives another MAC. */
static void test_every_field_counts(void **state) {
  (void)state;
  char base[VG_ASSIGN_MAC_TEXT_MAX], other[VG_ASSIGN_MAC_TEXT_MAX];
  struct vg_err err = {""};
  assert_int_equal(vg_assign_mac_with(g_key, sizeof(g_key), &g_subject, base, &err), 0);
  const char *changed = "x";
  for (int f = 0; f < 5; f++) {
    struct vg_assign_subject s = g_subject;
    const char **field[] = {&s.uid, &s.ns, &s.name, &s.node, &s.assigned};
    *field[f] = changed;
    assert_int_equal(vg_assign_mac_with(g_key, sizeof(g_key), &s, other, &err), 0);
    if (strcmp(base, other) == 0) fail_msg("field %d does not change the MAC", f);
  }
  /* "ab","c" and "a","bc": the length prefixes keep them apart. */
  struct vg_assign_subject a = g_subject, b = g_subject;
  a.ns = "ab", a.name = "c";
  b.ns = "a", b.name = "bc";
  assert_int_equal(vg_assign_mac_with(g_key, sizeof(g_key), &a, base, &err), 0);
  assert_int_equal(vg_assign_mac_with(g_key, sizeof(g_key), &b, other, &err), 0);
  assert_string_not_equal(base, other);
  /* And the key. */
  unsigned char k2[32];
  memcpy(k2, g_key, sizeof(k2));
  k2[31] ^= 1;
  assert_int_equal(vg_assign_mac_with(k2, sizeof(k2), &g_subject, other, &err), 0);
  assert_string_not_equal(other, KAT_MAC);
}

static void test_equal_is_constant_time(void **state) {
  (void)state;
  g_memcmp_calls = 0;
  assert_true(vg_assign_mac_equal(KAT_MAC, KAT_MAC));
  assert_int_equal(g_memcmp_calls, 1);
  assert_int_equal(g_memcmp_len, strlen(KAT_MAC));
  char last[] = KAT_MAC;
  last[sizeof(last) - 2] ^= 1;
  assert_false(vg_assign_mac_equal(last, KAT_MAC));
  assert_int_equal(g_memcmp_calls, 2);
  assert_false(vg_assign_mac_equal("v1:00", KAT_MAC)); /* lengths differ: no compare needed */
}

static void test_key_file_errors(void **state) {
  (void)state;
  struct vg_err err = {""};
  assert_null(vg_assign_key_open(g_path, &err));
  assert_non_null(strstr(err.msg, "No such file"));
  assert_non_null(strstr(err.msg, g_path));
  write_key(g_key, 31);
  assert_null(vg_assign_key_open(g_path, &err));
  assert_non_null(strstr(err.msg, "holds 31 bytes; it needs at least 32 random bytes"));
  static unsigned char big[VG_ASSIGN_KEY_MAX + 1];
  write_key(big, sizeof(big));
  assert_null(vg_assign_key_open(g_path, &err));
  assert_non_null(strstr(err.msg, "larger than 4096 bytes"));
  assert_null(vg_assign_key_open("", &err));
}

/* A pod as the API server returns it, bound to node1. */
static json_object *pod_with(const char *uid, const char *mac) {
  json_object *pod = json_object_new_object(), *meta = json_object_new_object();
  json_object *ann = json_object_new_object(), *spec = json_object_new_object();
  json_object_object_add(ann, VG_ASSIGNED_ANNOTATION, json_object_new_string(ASSIGNED));
  if (mac != NULL)
    json_object_object_add(ann, VG_ASSIGNED_MAC_ANNOTATION, json_object_new_string(mac));
  json_object_object_add(meta, "uid", json_object_new_string(uid));
  json_object_object_add(meta, "namespace", json_object_new_string("default"));
  json_object_object_add(meta, "name", json_object_new_string("train"));
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(spec, "nodeName", json_object_new_string("node1"));
  json_object_object_add(pod, "metadata", meta);
  json_object_object_add(pod, "spec", spec);
  return pod;
}

static enum vg_assign_trust verdict(struct vg_assign_key *k, json_object *pod, const char *node,
                                    struct vg_err *err) {
  enum vg_assign_trust t = vg_assign_verify_pod(k, pod, node, err);
  json_object_put(pod);
  return t;
}

static void test_verify_pod(void **state) {
  (void)state;
  write_key(g_key, sizeof(g_key));
  struct vg_err err = {""};
  struct vg_assign_key *k = vg_assign_key_open(g_path, &err);
  assert_non_null(k);
  char mac[VG_ASSIGN_MAC_TEXT_MAX];
  assert_int_equal(vg_assign_sign(k, &g_subject, mac, &err), 0);
  assert_string_equal(mac, KAT_MAC);

  g_memcmp_calls = 0;
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), "node1", &err), VG_ASSIGN_SIGNED);
  assert_int_equal(g_memcmp_calls, 1); /* the pod's MAC was compared in constant time */
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), NULL, &err), VG_ASSIGN_SIGNED);
  assert_int_equal(verdict(k, pod_with(UID, NULL), "node1", &err), VG_ASSIGN_UNSIGNED);
  assert_string_equal(err.msg, "vgpu.io/assigned-mac missing");
  /* Copied from a pod of the same name and assignment, with another UID. */
  assert_int_equal(verdict(k, pod_with("another-uid", KAT_MAC), "node1", &err), VG_ASSIGN_FORGED);
  assert_string_equal(err.msg, "vgpu.io/assigned-mac does not match");
  /* Checked on another node. */
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), "node2", &err), VG_ASSIGN_FORGED);
  char upper[] = KAT_MAC;
  upper[3] = 'A';
  assert_int_equal(verdict(k, pod_with(UID, upper), "node1", &err), VG_ASSIGN_FORGED);

  /* The file changes (a rotated Secret): the new key applies at once. */
  unsigned char k2[40];
  memset(k2, 7, sizeof(k2));
  write_key(k2, sizeof(k2));
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), "node1", &err), VG_ASSIGN_FORGED);
  /* Gone or too short: nothing verifies, not even what did (fail closed). */
  write_key(g_key, 8);
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), "node1", &err), VG_ASSIGN_NO_KEY);
  assert_non_null(strstr(err.msg, "holds 8 bytes"));
  assert_int_equal(vg_assign_sign(k, &g_subject, mac, &err), -1);
  unlink(g_path);
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), "node1", &err), VG_ASSIGN_NO_KEY);
  write_key(g_key, sizeof(g_key)); /* and back */
  assert_int_equal(verdict(k, pod_with(UID, KAT_MAC), "node1", &err), VG_ASSIGN_SIGNED);
  vg_assign_key_free(k);
}

static void test_refusal_lines(void **state) {
  (void)state;
  struct vg_err d = {"vgpu.io/assigned-mac missing"};
  char line[1024];
  vg_assign_trust_refusal(VG_ASSIGN_UNSIGNED, "ns", "foo", &d, line, sizeof(line));
  assert_non_null(strstr(line,
                         "pod ns/foo carries a vgpu.io/assigned that vgpu-scheduler did not sign "
                         "(vgpu.io/assigned-mac missing): "));
  assert_null(strchr(line, '\n'));
  assert_null(strchr(line, '%'));
  struct vg_err k = {"assignment key /k: No such file or directory"};
  vg_assign_trust_refusal(VG_ASSIGN_NO_KEY, "ns", "foo", &k, line, sizeof(line));
  assert_non_null(strstr(line, "cannot check that vgpu-scheduler signed"));
  assert_non_null(strstr(line, k.msg));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_message_is_length_prefixed),
      cmocka_unit_test(test_known_answer),
      cmocka_unit_test(test_every_field_counts),
      cmocka_unit_test(test_equal_is_constant_time),
      cmocka_unit_test(test_key_file_errors),
      cmocka_unit_test(test_verify_pod),
      cmocka_unit_test(test_refusal_lines),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * test_plugin_assigned.c -- the scheduler's assignment carried through the
 * node: vgpu-scheduler binds pods and writes `vgpu.io/assigned`; the fake
 * kubelet admits them one at a time as the kubelet does (the pod listed in
 * PodResources from the start of its admission, GetPreferredAllocation over
 * the free IDs, Allocate); the plugin must steer every container to exactly
 * the GPUs the scheduler chose and bind exactly the limits it assigned. A
 * kubelet that ignores the preference, and a malformed annotation, must
 * leave the container's limits pending (libvgpu fails closed) while the
 * plugin goes on serving everyone else.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
// clang-format off
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <json-c/json.h>

#include "assignment.h"
#include "assignment_mac.h"
#include "k8s.h"
#include "plugin_fixture.h"

#define MIB (1ull << 20)

/* start_node with 4 IDs per GPU; the two GPUs' UUIDs. */
static void two_gpu_node(struct setup *s, char u0[128], char u1[128]) {
  char kubeconfig[500];
  start_node(s, kubeconfig, sizeof(kubeconfig), "4");
  two_uuids(s->fk.line, u0, u1, 128);
}

/* A pod bound to node1 with an assignment written by hand. */
static void add_assigned_pod(struct setup *s, const char *name, const char *assigned) {
  json_object *pod = json_object_new_object(), *meta = json_object_new_object();
  json_object *ann = json_object_new_object();
  json_object_object_add(ann, VG_ASSIGNED_ANNOTATION, json_object_new_string(assigned));
  json_object_object_add(meta, "name", json_object_new_string(name));
  json_object_object_add(meta, "namespace", json_object_new_string("default"));
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(pod, "metadata", meta);
  json_object *spec = json_tokener_parse(
      "{\"nodeName\":\"node1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu\":\"1\"}}}]}");
  json_object_object_add(pod, "spec", spec);
  assert_true(api(s, "POST", "/_test/pods", json_object_to_json_string(pod), NULL, 0) < 300);
  json_object_put(pod);
}

/* An assignment of one GPU to container ctr's nvidia.com/vgpu, for node
 * (the text, in a static buffer). */
static char *assignment_for(const char *node, const char *ctr, const char *uuid, long long memory,
                            int cores) {
  static char text[1024];
  snprintf(text, sizeof(text),
           "{\"version\":1,\"node\":\"%s\",\"containers\":[{\"name\":\"%s\",\"resource\":"
           "\"nvidia.com/vgpu\",\"gpus\":[{\"uuid\":\"%s\",\"index\":0,\"memory\":%lld,"
           "\"cores\":%d}]}]}",
           node, ctr, uuid, memory, cores);
  return text;
}

static char *one_gpu_assignment(const char *uuid, uint64_t memory, int cores) {
  return assignment_for("node1", "c", uuid, (long long)memory, cores);
}

/* Waits until the region of an admit answer is no longer pending. */
static bool bound(const char *admitted, struct region_view *v, double seconds) {
  region_from(admitted, v);
  for (int i = 0; i < (int)(seconds * 40) && v->pending; i++) {
    usleep(25000);
    region_from(admitted, v);
  }
  return !v->pending;
}

/* The limits the region holds for a GPU, by UUID; false if it has none. */
static bool region_gpu(const struct region_view *v, const char *uuid, uint64_t *mem, unsigned *sm) {
  for (unsigned i = 0; i < v->ndev && i < 4; i++)
    if (strcmp(v->uuid[i], uuid) == 0) {
      *mem = v->limit[i];
      *sm = v->sm[i];
      return true;
    }
  return false;
}

/* The admit answer r took IDs of GPU uuid, and the binder wrote mem and sm
 * for that GPU into its region. */
static void assert_placed(const char *r, const char *uuid, uint64_t mem, unsigned sm) {
  char want[200];
  snprintf(want, sizeof(want), "\"ids\": [\"%s::", uuid);
  assert_non_null(strstr(r, want));
  struct region_view v;
  uint64_t got_mem;
  unsigned got_sm;
  assert_true(bound(r, &v, 5));
  assert_true(region_gpu(&v, uuid, &got_mem, &got_sm));
  assert_int_equal(got_mem, mem);
  assert_int_equal(got_sm, sm);
}

/* Two pods assigned to GPU 1 and GPU 0, admitted in that order: the plugin's
 * own rule would take GPU 0 first, the assignment says otherwise. */
static void test_steer_follows_assignment(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  two_gpu_node(s, u0, u1);
  add_assigned_pod(s, "a", one_gpu_assignment(u1, 3000 * MIB, 30));
  add_assigned_pod(s, "b", one_gpu_assignment(u0, 1000 * MIB, 0));

  static char ra[1 << 16], rb[1 << 16];
  snprintf(ra, sizeof(ra), "%s", fake(s, "admit default a c nvidia.com/vgpu 1"));
  assert_non_null(strstr(ra, "\"ok\": true"));
  snprintf(rb, sizeof(rb), "%s", fake(s, "admit default b c nvidia.com/vgpu 1"));
  assert_non_null(strstr(rb, "\"ok\": true"));
  assert_placed(ra, u1, 3000 * MIB, 30);
  assert_placed(rb, u0, 1000 * MIB, 0);
}

/* A kubelet that ignores the preference gives pod "a" GPU 0 although the
 * scheduler assigned GPU 1: its limits stay pending and the log says why. */
static void test_mismatch_fails_closed(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  two_gpu_node(s, u0, u1);
  add_assigned_pod(s, "a", one_gpu_assignment(u1, 3000 * MIB, 30));
  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default a c nvidia.com/vgpu 1 %s::0", u0));
  assert_non_null(strstr(r, "\"ok\": true"));
  char want[400];
  snprintf(want, sizeof(want), "\"preferred\": [\"%s::", u1);
  assert_non_null(strstr(r, want)); /* it was steered, and overruled */
  snprintf(want, sizeof(want), "GPU(s) %s, but the scheduler assigned %s", u0, u1);
  assert_true(wait_log(s, want, 5));
  struct region_view v;
  region_from(r, &v);
  assert_true(v.pending);
}

/* A malformed assignment: no steering, limits pending with the field named;
 * the next, well-formed pod is served and bound as usual. */
static void test_malformed_assignment(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  two_gpu_node(s, u0, u1);
  add_assigned_pod(s, "bad", assignment_for("node1", "c", u1, -5, 0));
  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default bad c nvidia.com/vgpu 1"));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_true(wait_log(s,
                       "pod default/bad: annotation vgpu.io/assigned: container c: gpus[0]: "
                       "\"memory\" is -5",
                       5));
  struct region_view v;
  region_from(r, &v);
  assert_true(v.pending);

  add_assigned_pod(s, "good", one_gpu_assignment(u1, 2000 * MIB, 10));
  snprintf(r, sizeof(r), "%s", fake(s, "admit default good c nvidia.com/vgpu 1"));
  assert_non_null(strstr(r, "\"ok\": true"));
  uint64_t mem;
  unsigned sm;
  assert_true(bound(r, &v, 5));
  assert_true(region_gpu(&v, u1, &mem, &sm));
  assert_int_equal(mem, 2000 * MIB);
  assert_int_equal(sm, 10);
}

/* A node serving gpushare in GiB units; the two GPUs' UUIDs. */
static void gpushare_gib_node(struct setup *s, char u0[128], char u1[128]) {
  char config[600], kubeconfig[500];
  snprintf(config, sizeof(config), "%s/gpushare.yaml", s->env.dir);
  FILE *f = fopen(config, "w");
  fputs("version: v1\ndialects:\n  gpushare:\n    memoryUnit: GiB\n", f);
  fclose(f);
  start_node_with(s, kubeconfig, sizeof(kubeconfig), config, "aliyun.com/gpu-mem", NULL);
  two_uuids(s->fk.line, u0, u1, 128);
}

/* An assignment entry: container ctr's aliyun.com/gpu-mem on GPU 1 (uuid). */
static const char *share_entry(char *buf, size_t len, const char *ctr, const char *uuid,
                               unsigned long long bytes) {
  snprintf(buf, len,
           "{\"name\":\"%s\",\"resource\":\"aliyun.com/gpu-mem\",\"gpus\":[{\"uuid\":\"%s\","
           "\"index\":1,\"memory\":%llu,\"cores\":0}]}",
           ctr, uuid, bytes);
  return buf;
}

/* gpushare (GiB units): the assignment names GPU 1 for 3 GiB; all three IDs
 * come from GPU 1, although the plugin's own best-fit rule would take GPU 0
 * (both are empty, GPU 0 comes first). The limits come from the IDs. */
static void test_steer_gpushare(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  gpushare_gib_node(s, u0, u1);
  char text[600], c[300];
  snprintf(text, sizeof(text), "{\"version\":1,\"node\":\"node1\",\"containers\":[%s]}",
           share_entry(c, sizeof(c), "c", u1, 3ull << 30));
  add_assigned_pod(s, "share", text);
  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default share c aliyun.com/gpu-mem 3"));
  assert_non_null(strstr(r, "\"ok\": true"));
  json_object *o = json_tokener_parse(r), *ids;
  assert_true(json_object_object_get_ex(o, "ids", &ids));
  assert_int_equal(json_object_array_length(ids), 3);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(
        strncmp(json_object_get_string(json_object_array_get_idx(ids, i)), u1, strlen(u1)), 0);
  json_object_put(o);
  struct region_view v;
  region_from(r, &v);
  assert_false(v.pending);
  assert_string_equal(v.uuid[0], u1);
  assert_int_equal(v.limit[0], 3ull << 30);
}

/* r's (an admit answer's) environment variable key, "" when absent (a
 * static copy). */
static const char *env_of(const char *r, const char *key) {
  static char value[256];
  json_object *o = json_tokener_parse(r), *envs, *v;
  value[0] = 0;
  if (json_object_object_get_ex(o, "envs", &envs) && json_object_object_get_ex(envs, key, &v))
    snprintf(value, sizeof(value), "%s", json_object_get_string(v));
  json_object_put(o);
  return value;
}

/* Aliyun's handshake and variables for a pod vgpu-scheduler placed (GiB
 * units): two containers, 3 and 2 GiB, both assigned GPU 1 and marked
 * ALIYUN_COM_GPU_MEM_ASSIGNED "false" as the extender binds. Admitting the
 * first gives it IDX 1 (its GPU), CONTAINER 3 (its own), POD 5 (the pod's)
 * and DEV (GPU 1's units), and marks the pod "true" with a new ASSUME_TIME. */
static void test_gpushare_pod_handshake(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  gpushare_gib_node(s, u0, u1);
  char assigned[800], c[300], d[300];
  snprintf(assigned, sizeof(assigned), "{\"version\":1,\"node\":\"node1\",\"containers\":[%s,%s]}",
           share_entry(c, sizeof(c), "c", u1, 3ull << 30),
           share_entry(d, sizeof(d), "d", u1, 2ull << 30));
  json_object *pod = json_tokener_parse(
      "{\"metadata\":{\"name\":\"share2\",\"namespace\":\"default\",\"annotations\":{"
      "\"ALIYUN_COM_GPU_MEM_ASSIGNED\":\"false\",\"ALIYUN_COM_GPU_MEM_ASSUME_TIME\":\"1\"}},"
      "\"spec\":{\"nodeName\":\"node1\",\"containers\":["
      "{\"name\":\"c\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"3\"}}},"
      "{\"name\":\"d\",\"resources\":{\"limits\":{\"aliyun.com/gpu-mem\":\"2\"}}}]}}");
  json_object *ann = json_object_object_get(json_object_object_get(pod, "metadata"), "annotations");
  json_object_object_add(ann, VG_ASSIGNED_ANNOTATION, json_object_new_string(assigned));
  assert_true(api(s, "POST", "/_test/pods", json_object_to_json_string(pod), NULL, 0) < 300);
  json_object_put(pod);

  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default share2 c aliyun.com/gpu-mem 3"));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_string_equal(env_of(r, "ALIYUN_COM_GPU_MEM_IDX"), "1");
  assert_string_equal(env_of(r, "ALIYUN_COM_GPU_MEM_CONTAINER"), "3");
  assert_string_equal(env_of(r, "ALIYUN_COM_GPU_MEM_POD"), "5");
  char dev[32];
  snprintf(dev, sizeof(dev), "%s", env_of(r, "ALIYUN_COM_GPU_MEM_DEV"));
  assert_true(atoi(dev) >= 5);

  static char body[1 << 16];
  assert_int_equal(
      api(s, "GET", "/api/v1/namespaces/default/pods/share2", NULL, body, sizeof(body)), 200);
  json_object *got = json_tokener_parse(body);
  ann = json_object_object_get(json_object_object_get(got, "metadata"), "annotations");
  assert_string_equal(json_object_get_string(json_object_object_get(ann, VG_ALIYUN_ASSIGNED)),
                      "true");
  const char *stamp = json_object_get_string(json_object_object_get(ann, VG_ALIYUN_ASSUME_TIME));
  assert_true(strlen(stamp) >= 19); /* Unix nanoseconds, not the bind's "1" */
  json_object_put(got);

  /* The second container: the same pod total; the pod is no longer "false",
   * so nothing is patched again. */
  snprintf(r, sizeof(r), "%s", fake(s, "admit default share2 d aliyun.com/gpu-mem 2"));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_string_equal(env_of(r, "ALIYUN_COM_GPU_MEM_POD"), "5");
  assert_string_equal(env_of(r, "ALIYUN_COM_GPU_MEM_CONTAINER"), "2");
}

/* The API server goes away: admission is still served (the plugin's own
 * preference), the log says why once, and the limits stay pending. */
static void test_api_down_still_serves(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  two_gpu_node(s, u0, u1);
  add_assigned_pod(s, "a", one_gpu_assignment(u1, 3000 * MIB, 30));
  kill(s->api, SIGKILL);
  vg_wait(s->api);
  s->api = 0;
  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default a c nvidia.com/vgpu 1"));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_true(wait_log(s, "the plugin's own preference applies meanwhile", 5));
  assert_true(wait_log(s, "cannot read pod default/a (limits stay pending, retrying)", 5));
  struct region_view v;
  region_from(r, &v);
  assert_true(v.pending);
}

/* A pod bound without vgpu-scheduler (spec.nodeName set by hand, no
 * assignment) asks for the GPU the scheduler gave pod "placed". Allocate
 * refuses it with a message saying what to do, before any slot exists; the
 * kubelet releases its ID, and "placed", admitted right after, gets its GPU
 * and its limits. With one ID per GPU, a bypass pod that got through would
 * have taken that ID. */
static void test_unplaced_pod_refused(void **state) {
  struct setup *s = *state;
  char kubeconfig[500];
  start_node(s, kubeconfig, sizeof(kubeconfig), "1");
  char u0[128], u1[128];
  two_uuids(s->fk.line, u0, u1, sizeof(u0));
  assert_true(api(s, "POST", "/_test/pods",
                  "{\"metadata\":{\"name\":\"bypass\",\"namespace\":\"default\"},\"spec\":{"
                  "\"nodeName\":\"node1\",\"containers\":[{\"name\":\"c\",\"resources\":{"
                  "\"limits\":{\"nvidia.com/vgpu\":\"1\"}}}]}}",
                  NULL, 0) < 300);
  add_assigned_pod(s, "placed", one_gpu_assignment(u1, 2000 * MIB, 20));

  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default bypass c nvidia.com/vgpu 1"));
  static const char why[] =
      "pod default/bypass was not placed by vgpu-scheduler (its vgpu.io/assigned annotation is "
      "missing): set spec.schedulerName: vgpu-scheduler";
  json_object *o = json_tokener_parse(r), *v;
  if (!json_object_object_get_ex(o, "details", &v)) fail_msg("bypass was admitted: %s", r);
  assert_string_equal(json_object_get_string(v), why);
  assert_true(json_object_object_get_ex(o, "code", &v));
  assert_string_equal(json_object_get_string(v), "FAILED_PRECONDITION");
  json_object_put(o);
  assert_true(wait_log(s, why, 5));
  char slots[600];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(access(slots, F_OK), -1); /* nothing was created for it */

  snprintf(r, sizeof(r), "%s", fake(s, "admit default placed c nvidia.com/vgpu 1"));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_placed(r, u1, 2000 * MIB, 20);
}

/* An assignment that is not this placement's (written for another node, or
 * without the container) is refused as well, naming what is wrong. */
static void test_foreign_assignment_refused(void **state) {
  struct setup *s = *state;
  char u0[128], u1[128];
  two_gpu_node(s, u0, u1);
  add_assigned_pod(s, "copied", assignment_for("node2", "c", u1, 1 << 20, 0));
  const char *r = fake(s, "admit default copied c nvidia.com/vgpu 1");
  assert_non_null(strstr(r, "\"code\": \"FAILED_PRECONDITION\""));
  assert_non_null(strstr(r,
                         "pod default/copied was not placed by vgpu-scheduler (its "
                         "vgpu.io/assigned annotation is for node node2, not node1): set "
                         "spec.schedulerName: vgpu-scheduler"));
  add_assigned_pod(s, "partial", assignment_for("node1", "other", u1, 1 << 20, 0));
  r = fake(s, "admit default partial c nvidia.com/vgpu 1");
  assert_non_null(strstr(r,
                         "(its vgpu.io/assigned annotation has no entry for container c and "
                         "nvidia.com/vgpu)"));
}

/* ---- signed assignments (--assignment-key) ---- */

/* A pod with a given UID, its assignment and (if mac) its MAC. */
static void add_signed_pod(struct setup *s, const char *name, const char *uid, const char *assigned,
                           const char *mac) {
  json_object *pod = json_tokener_parse(
      "{\"metadata\":{\"namespace\":\"default\",\"annotations\":{}},\"spec\":{\"nodeName\":"
      "\"node1\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
      "{\"nvidia.com/vgpu\":\"1\"}}}]}}");
  json_object *meta = json_object_object_get(pod, "metadata");
  json_object *ann = json_object_object_get(meta, "annotations");
  json_object_object_add(meta, "name", json_object_new_string(name));
  json_object_object_add(meta, "uid", json_object_new_string(uid));
  json_object_object_add(ann, VG_ASSIGNED_ANNOTATION, json_object_new_string(assigned));
  if (mac != NULL)
    json_object_object_add(ann, VG_ASSIGNED_MAC_ANNOTATION, json_object_new_string(mac));
  assert_true(api(s, "POST", "/_test/pods", json_object_to_json_string(pod), NULL, 0) < 300);
  json_object_put(pod);
}

/* n bytes into the test's directory as name; its path in path. */
static void write_key_file(struct setup *s, const char *name, const void *bytes, size_t n,
                           char *path, size_t len) {
  snprintf(path, len, "%s/%s", s->env.dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static const unsigned char KEY[32] = "vgpu-test-assignment-key-32-byte";

static char *mac_of(const char *uid, const char *name, const char *node, const char *assigned) {
  static char mac[VG_ASSIGN_MAC_TEXT_MAX];
  struct vg_assign_subject subj = {uid, "default", name, node, assigned};
  struct vg_err err;
  if (vg_assign_mac_with(KEY, sizeof(KEY), &subj, mac, &err) != 0) fail_msg("%s", err.msg);
  return mac;
}

/* Why Allocate refused the pod, from the fake kubelet's answer. */
static const char *refusal(const char *r) {
  static char why[2048];
  json_object *o = json_tokener_parse(r), *v;
  if (o == NULL || !json_object_object_get_ex(o, "details", &v)) fail_msg("admitted: %s", r);
  snprintf(why, sizeof(why), "%s", json_object_get_string(v));
  json_object_put(o);
  return why;
}

/* The plugin started with --assignment-key: Allocate admits a pod whose
 * assignment vgpu-scheduler signed for it and this node (and the binder
 * grants it), and refuses, with one line naming what is wrong, a pod with
 * an unsigned assignment, one with the MAC of another pod (its UID
 * differs: what a copy of a running pod's annotations carries), one signed
 * for another node, and one with a MAC edited by hand. */
static void test_gate_checks_signature(void **state) {
  struct setup *s = *state;
  char keyfile[600];
  write_key_file(s, "assignment.key", KEY, sizeof(KEY), keyfile, sizeof(keyfile));
  s->extra_args[0] = "--assignment-key";
  s->extra_args[1] = keyfile;
  char u0[128], u1[128];
  two_gpu_node(s, u0, u1);
  char text[1024];
  snprintf(text, sizeof(text), "%s", one_gpu_assignment(u1, 2000 * MIB, 20));
  add_signed_pod(s, "signed", "uid-signed", text, mac_of("uid-signed", "signed", "node1", text));
  add_signed_pod(s, "unsigned", "uid-unsigned", text, NULL);
  add_signed_pod(s, "copied", "uid-copied", text, mac_of("uid-signed", "copied", "node1", text));
  add_signed_pod(s, "elsewhere", "uid-elsewhere", text,
                 mac_of("uid-elsewhere", "elsewhere", "node2", text));
  char edited[VG_ASSIGN_MAC_TEXT_MAX];
  snprintf(edited, sizeof(edited), "%s", mac_of("uid-edited", "edited", "node1", text));
  edited[10] = edited[10] == '0' ? '1' : '0';
  add_signed_pod(s, "edited", "uid-edited", text, edited);

  static const char *const cases[][2] = {
      {"unsigned", "(vgpu.io/assigned-mac missing)"},
      {"copied", "(vgpu.io/assigned-mac does not match)"},
      {"elsewhere", "(vgpu.io/assigned-mac does not match)"},
      {"edited", "(vgpu.io/assigned-mac does not match)"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *why = refusal(fake(s, "admit default %s c nvidia.com/vgpu 1", cases[i][0]));
    char want[300];
    snprintf(want, sizeof(want),
             "pod default/%s carries a vgpu.io/assigned that vgpu-scheduler did not sign %s: ",
             cases[i][0], cases[i][1]);
    if (strncmp(why, want, strlen(want)) != 0) fail_msg("%s: %s", cases[i][0], why);
    assert_true(wait_log(s, want, 5));
  }
  char slots[600];
  snprintf(slots, sizeof(slots), "%s/slots", s->state_dir);
  assert_int_equal(access(slots, F_OK), -1); /* nothing was made for them */

  static char r[1 << 16];
  snprintf(r, sizeof(r), "%s", fake(s, "admit default signed c nvidia.com/vgpu 1"));
  assert_non_null(strstr(r, "\"ok\": true"));
  assert_placed(r, u1, 2000 * MIB, 20);

  /* The key file goes (a Secret deleted): every GPU pod is refused. */
  assert_int_equal(unlink(keyfile), 0);
  add_signed_pod(s, "later", "uid-later", text, mac_of("uid-later", "later", "node1", text));
  const char *why = refusal(fake(s, "admit default later c nvidia.com/vgpu 1"));
  if (strstr(why, "the node agent cannot check that vgpu-scheduler signed") == NULL ||
      strstr(why, keyfile) == NULL)
    fail_msg("without the key: %s", why);
}

/* A key file too short is refused at start, with the reason. */
static void test_short_key_refused_at_start(void **state) {
  struct setup *s = *state;
  char keyfile[600];
  write_key_file(s, "short.key", "short", 5, keyfile, sizeof(keyfile));
  char *argv[] = {(char *)vg_build_path("bin/vgpu-device-plugin"),
                  "--assignment-key",
                  keyfile,
                  "--kubelet-socket",
                  "",
                  NULL};
  static struct vg_run run;
  assert_int_equal(vg_run(&s->env, argv, &run), 2);
  if (strstr(run.err, "vgpu-device-plugin: --assignment-key: assignment key ") == NULL ||
      strstr(run.err, "holds 5 bytes; it needs at least 32 random bytes") == NULL)
    fail_msg("stderr: %s", run.err);
}

/* ---- through the real scheduler ---- */

/* The pod's assignment as the API server holds it. */
static void assignment_of(struct setup *s, const char *name, struct vg_assignment *a) {
  static char body[1 << 16];
  char path[200];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
  assert_int_equal(api(s, "GET", path, NULL, body, sizeof(body)), 200);
  json_object *pod = json_tokener_parse(body);
  struct vg_err err;
  if (vg_assign_from_pod(pod, a, &err) != 1) fail_msg("pod %s: no assignment (%s)", name, err.msg);
  json_object_put(pod);
}

enum { PODS = 50 };

/* pod i: 1 GPU (2 every fifth pod), 256..1216 MiB per GPU, 0 or 5 % cores. */
static int pod_gpus(int i) { return i % 5 == 0 ? 2 : 1; }

/* The pods fill node1's GPUs to the last slice and contextReserve; they ask
 * binpack so that which GPUs each gets stays what this test was sized for
 * (the node policy's own pick spreads them differently, docs/scheduler.md). */
static void create_unbound_pods(struct setup *s) {
  for (int i = 0; i < PODS; i++) {
    char pod[800];
    snprintf(pod, sizeof(pod),
             "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"default\",\"annotations\":{"
             "\"vgpu.io/gpu-scheduler-policy\":\"binpack\"}},\"spec\":{"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/vgpu\":"
             "\"%d\",\"nvidia.com/gpumem\":\"%d\",\"nvidia.com/gpucores\":\"%d\"}}}]}}",
             i, pod_gpus(i), 256 + (i % 11) * 96, (i % 3 == 0) ? 5 : 0);
    assert_true(api(s, "POST", "/_test/pods", pod, NULL, 0) < 300);
  }
}

static void wait_inventory(struct setup *s) {
  static char body[1 << 16];
  for (int i = 0; i < 100; i++) {
    api(s, "GET", "/api/v1/nodes/node1", NULL, body, sizeof(body));
    if (strstr(body, "vgpu.io/gpu-inventory") != NULL) return;
    usleep(50000);
  }
  fail_msg("the plugin never published the inventory");
}

/* Every container's IDs lie on its assigned GPUs (one per GPU), and its
 * region holds the assigned memory and cores for each of them. */
static void check_pod(struct setup *s, int i, const char *admitted) {
  char name[16];
  snprintf(name, sizeof(name), "p%d", i);
  struct vg_assignment a;
  assignment_of(s, name, &a);
  const struct vg_assign_ctr *c = vg_assign_find(&a, "c", "nvidia.com/vgpu");
  assert_non_null(c);
  assert_int_equal(c->ngpus, pod_gpus(i));
  json_object *r = json_tokener_parse(admitted), *ids;
  assert_true(json_object_object_get_ex(r, "ids", &ids));
  assert_int_equal(json_object_array_length(ids), c->ngpus);
  struct region_view v;
  if (!bound(admitted, &v, 10)) fail_msg("pod %s never bound", name);
  assert_int_equal(v.ndev, c->ngpus);
  for (int k = 0; k < c->ngpus; k++) {
    bool on = false;
    for (int j = 0; j < c->ngpus; j++) {
      const char *id = json_object_get_string(json_object_array_get_idx(ids, j));
      on = on || (strncmp(id, c->gpu[k].uuid, strlen(c->gpu[k].uuid)) == 0 &&
                  strncmp(id + strlen(c->gpu[k].uuid), "::", 2) == 0);
    }
    if (!on) fail_msg("pod %s: no ID on its assigned GPU %s: %s", name, c->gpu[k].uuid, admitted);
    uint64_t mem;
    unsigned sm;
    assert_true(region_gpu(&v, c->gpu[k].uuid, &mem, &sm));
    assert_int_equal(mem, (uint64_t)c->gpu[k].memory);
    assert_int_equal(mem, (uint64_t)(256 + (i % 11) * 96) * MIB);
    assert_int_equal(sm, (unsigned)c->gpu[k].cores);
  }
  json_object_put(r);
  vg_assign_free(&a);
}

/* Issue 4's concurrency check: 50 pods bound to one node at once by the
 * real scheduler, admitted in random order; each container gets exactly the
 * GPUs and limits the scheduler assigned to it. */
static void test_scheduler_fifty_pods(void **state) {
  struct setup *s = *state;
  char kubeconfig[500];
  vg_env_set(&s->env, "VGPU_SIM_DEVICES", "4");
  vg_env_set(&s->env, "VGPU_SIM_MEMORY", "16g");
  start_node(s, kubeconfig, sizeof(kubeconfig), "32");
  wait_inventory(s);
  char *sargv[] = {(char *)vg_build_path("bin/vgpu-scheduler"),
                   "--listen",
                   "127.0.0.1:0",
                   "--kubeconfig",
                   kubeconfig,
                   NULL};
  int port = 0;
  s->sched = vg_start_server(sargv, &port);
  assert_true(s->sched > 0);
  create_unbound_pods(s);
  static char out[1 << 16];
  for (int i = 0; i < PODS; i++) {
    char body[300];
    snprintf(body, sizeof(body),
             "{\"PodName\":\"p%d\",\"PodNamespace\":\"default\",\"PodUID\":\"\",\"Node\":"
             "\"node1\"}",
             i);
    assert_int_equal(http_call(port, NULL, "POST", "/bind", body, out, sizeof(out)), 200);
    if (strstr(out, "\"Error\":\"\"") == NULL && strstr(out, "\"Error\": \"\"") == NULL)
      fail_msg("bind p%d: %s", i, out);
  }
  kill(s->sched, SIGTERM);
  vg_wait(s->sched);
  s->sched = 0;

  int order[PODS];
  for (int i = 0; i < PODS; i++) order[i] = i;
  srand(2026);
  for (int i = PODS - 1; i > 0; i--) {
    int j = rand() % (i + 1), t = order[i];
    order[i] = order[j], order[j] = t;
  }
  static char admitted[PODS][4096];
  for (int n = 0; n < PODS; n++) {
    int i = order[n];
    const char *r = fake(s, "admit default p%d c nvidia.com/vgpu %d", i, pod_gpus(i));
    if (strstr(r, "\"ok\": true") == NULL) fail_msg("admit p%d: %s", i, r);
    snprintf(admitted[i], sizeof(admitted[i]), "%s", r);
  }
  for (int i = 0; i < PODS; i++) check_pod(s, i, admitted[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_steer_follows_assignment, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mismatch_fails_closed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_malformed_assignment, setup, teardown),
      cmocka_unit_test_setup_teardown(test_steer_gpushare, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gpushare_pod_handshake, setup, teardown),
      cmocka_unit_test_setup_teardown(test_api_down_still_serves, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unplaced_pod_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_assignment_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gate_checks_signature, setup, teardown),
      cmocka_unit_test_setup_teardown(test_short_key_refused_at_start, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scheduler_fifty_pods, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

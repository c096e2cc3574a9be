/*
 * test_scheduler_placement.c -- vgpu-scheduler end to end: one placement
 * model with vgpu-replay (issue 28).
 *
 *   - a node's allocatable CPU and memory less what its pods request is what
 *     prioritize scores with (a node whose CPU is taken scores 0);
 *   - prioritize answers ranks of the policy's scores (steps of 100, equal
 *     scores in a fixed order by name), not a 0..10 scale;
 *   - the target workload is learned from the pods filtered, each counted
 *     once, and shown at GET /workload;
 *   - bind writes the GPU the node policy picks -- the same one the
 *     placement core picks in-process on the same node and workload -- not
 *     a GPU chosen by another rule; the binpack/spread annotation still
 *     overrides it.
 *
 * The scheduler runs with --workload-prior 0, so the workload is exactly the
 * pods this file filters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "ext_harness.h"
#include "vg_sched.h"

#define VGPU10                                                                              \
  "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":10,\"unit\":0,\"memory\":" \
  "10737418240,\"cores\":100}]"

/* A Node of ngpu 10 GiB GPUs that reports allocatable cpu and memory. */
static void add_node_alloc(const char *name, int ngpu, const char *cpu, const char *mem) {
  char *text = ext_node_json(name, ngpu, 10, "A100", VGPU10, 0);
  json_object *node = json_tokener_parse(text);
  json_object *status = json_object_new_object(), *alloc = json_object_new_object();
  json_object_object_add(alloc, "cpu", json_object_new_string(cpu));
  json_object_object_add(alloc, "memory", json_object_new_string(mem));
  json_object_object_add(status, "allocatable", alloc);
  json_object_object_add(node, "status", status);
  ext_admin("/_test/nodes", json_object_to_json_string(node));
  json_object_put(node);
  free(text);
}

/* A Pod "main" container with requests (members of a JSON object) and GPU
 * limits (members, or ""), annotations (members, or NULL); bound to node
 * with the vgpu.io/assigned text assigned when node is set. */
static char *pod_req_json(const char *name, const char *requests, const char *gpu_limits,
                          const char *annotations, const char *node, const char *assigned) {
  char *text = NULL;
  if (asprintf(&text,
               "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
               "\"namespace\":\"default\",\"uid\":\"uid-%s\",\"annotations\":{%s}},"
               "\"spec\":{%s%s%s\"containers\":[{\"name\":\"main\",\"resources\":{"
               "\"requests\":{%s},\"limits\":{%s}}}]},\"status\":{\"phase\":\"%s\"}}",
               name, name, annotations ? annotations : "", node ? "\"nodeName\":\"" : "",
               node ? node : "", node ? "\"," : "", requests, gpu_limits,
               node ? "Running" : "Pending") < 0)
    abort();
  json_object *pod = json_tokener_parse(text);
  if (!pod) fail_msg("not JSON: %s", text);
  free(text);
  if (assigned)
    json_object_object_add(
        json_object_object_get(json_object_object_get(pod, "metadata"), "annotations"),
        "vgpu.io/assigned", json_object_new_string(assigned));
  char *out = strdup(json_object_to_json_string(pod));
  json_object_put(pod);
  return out;
}

static void add_pod_req(const char *name, const char *requests, const char *gpu_limits,
                        const char *node, const char *assigned) {
  char *p = pod_req_json(name, requests, gpu_limits, NULL, node, assigned);
  ext_admin("/_test/pods", p);
  free(p);
}

#define SHARE(pct)                                                    \
  "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"" pct \
  "\",\"nvidia.com/gpucores\":\"" pct "\""
#define REQ "\"cpu\":\"1\",\"memory\":\"1Gi\""

/* A node whose GPU 1 is 30 % taken: 700 of 1000 milli free, GPU 0 all. */
static void add_pick_node(const char *name) {
  add_node_alloc(name, 2, "64", "256Gi");
  char holder[64], *a = NULL;
  snprintf(holder, sizeof(holder), "%s-holder", name);
  if (asprintf(&a,
               "{\"version\":1,\"node\":\"%s\",\"containers\":[{\"name\":\"main\","
               "\"resource\":\"nvidia.com/vgpu\",\"gpus\":[{\"uuid\":\"GPU-%s-1\","
               "\"index\":1,\"memory\":3221225472,\"cores\":30}]}]}",
               name, name) < 0)
    abort();
  add_pod_req(holder, REQ, SHARE("30"), name, a);
  free(a);
}

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  static const char *const extra[] = {"--workload-prior", "0", "--workload-half-life", "1e9", NULL};
  if (ext_sched_start(extra) != 0) return -1;
  add_node_alloc("cpu-busy", 1, "8", "64Gi");
  add_node_alloc("cpu-free", 1, "8", "64Gi");
  add_pod_req("cpu-hog", "\"cpu\":\"7500m\",\"memory\":\"1Gi\"", "", "cpu-busy", NULL);
  add_node_alloc("twin-a", 2, "64", "256Gi");
  add_node_alloc("twin-b", 2, "64", "256Gi");
  add_pick_node("pick");
  add_pick_node("pick2");
  add_pick_node("pick-rank");
  return 0;
}

static json_object *call(const char *verb, const char *name, const char *gpu_limits,
                         const char *annotations, const char *names) {
  char *pod = pod_req_json(name, REQ, gpu_limits, annotations, NULL, NULL);
  char *body = ext_args_names(pod, names);
  json_object *res = ext_post(verb, body, 200);
  free(body);
  free(pod);
  return res;
}

/* Teaches the learned workload n pods of a 60 % share (distinct UIDs). */
static void teach(int n) {
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof(name), "teach-%d", i);
    /* Two nodes fit: a filter with one fitting node reserves it. */
    json_object_put(call("/filter", name, SHARE("60"), NULL, "\"twin-a\",\"twin-b\""));
  }
}

static json_object *workload(void) {
  char *text = NULL;
  long st = ext_call("/workload", NULL, 0, &text);
  assert_int_equal(st, 200);
  json_object *w = json_tokener_parse(text);
  if (!w) fail_msg("/workload is not JSON: %s", text);
  free(text);
  return w;
}

static void test_workload_learned(void **s) {
  (void)s;
  teach(10);
  teach(10); /* the same pods again: counted once */
  json_object *w = workload();
  printf("workload: %s\n", json_object_to_json_string(w));
  assert_int_equal(json_object_get_int(json_object_object_get(w, "podsSeen")), 10);
  json_object *types = json_object_object_get(w, "types");
  assert_int_equal(json_object_array_length(types), 1); /* prior 0: only what was seen */
  json_object *t = json_object_array_get_idx(types, 0);
  assert_int_equal(json_object_get_int(json_object_object_get(t, "gpuMilli")), 600);
  assert_int_equal(json_object_get_int(json_object_object_get(t, "numGpu")), 1);
  assert_int_equal(json_object_get_int(json_object_object_get(t, "cpuMilli")), 1000);
  assert_int_equal(json_object_get_int(json_object_object_get(t, "memoryMiB")), 1024);
  json_object_put(w);
  /* A refused pod (two GPU dialects) is not counted. */
  json_object_put(call("/filter", "refused",
                       "\"nvidia.com/vgpu\":\"1\",\"aliyun.com/gpu-mem\":\"2\"", NULL,
                       "\"twin-a\""));
  w = workload();
  assert_int_equal(json_object_get_int(json_object_object_get(w, "podsSeen")), 10);
  json_object_put(w);
}

static void test_cpu_counted(void **s) {
  (void)s;
  /* 7.5 of cpu-busy's 8 CPUs are requested: a pod asking 1 does not fit
   * there; kube-scheduler filters it out, and the model agrees. The GPUs
   * of both nodes are the same, so before issue 28 both scored alike. */
  json_object *res =
      call("/prioritize", "cpu-probe", SHARE("20"), NULL, "\"cpu-busy\",\"cpu-free\"");
  printf("prioritize: %s\n", json_object_to_json_string(res));
  assert_int_equal(ext_score(res, "cpu-busy"), 0);
  assert_int_equal(ext_score(res, "cpu-free"), 100);
  json_object_put(res);
}

static void test_ranks_no_ties(void **s) {
  (void)s;
  json_object *res = call("/prioritize", "rank-probe", SHARE("20"),
                          "\"vgpu.io/node-scheduler-policy\":\"binpack\"",
                          "\"twin-a\",\"pick-rank\",\"twin-b\",\"twin-a\"");
  printf("prioritize: %s\n", json_object_to_json_string(res));
  /* The same GPUs, the same policy score: still two ranks (by name hash),
   * so kube-scheduler's own plugins cannot choose between them. */
  int a = ext_score(res, "twin-a"), b = ext_score(res, "twin-b");
  assert_true((a == 100 && b == 200) || (a == 200 && b == 100));
  assert_int_equal(ext_score(res, "pick-rank"), 300); /* binpack: the fuller node */
  /* A name given twice is answered the same both times. */
  assert_int_equal(
      json_object_get_int(json_object_object_get(json_object_array_get_idx(res, 3), "Score")), a);
  json_object_put(res);
}

/* The GPU the placement core picks in-process for a 30 % share on a node
 * whose GPUs have free[0..1] milli, for a workload of 60 % shares; its
 * score margin over the other GPU in *margin. */
static int core_pick(const int free_milli[2], double *margin) {
  struct vg_pod shape = {.cpu = 1000, .mem = 1024, .num_gpu = 1, .gpu_milli = 600};
  struct vg_workload w;
  struct vg_err err;
  assert_int_equal(vg_workload_build(&w, &shape, 1, 95, &err), 0);
  struct vg_cluster c;
  vg_cluster_init(&c);
  struct vg_node n = {.name = "pick", .cpu_cap = 64000, .mem_cap = 262144, .ngpu = 2};
  assert_int_equal(vg_cluster_add_node(&c, &n, &err), 0);
  c.nodes[0].model = vg_cluster_model(&c, "A100", &err);
  c.nodes[0].gpu_free[0] = free_milli[0];
  c.nodes[0].gpu_free[1] = free_milli[1];
  struct vg_sched sched;
  assert_int_equal(vg_sched_init(&sched, &c, vg_policy_find("vgpu"), &w, &err), 0);
  struct vg_pod p = {.cpu = 1000, .mem = 1024, .num_gpu = 1, .gpu_milli = 300};
  struct vg_pick pick;
  double sc = vg_score_vgpu(&sched, 0, &p, &pick);
  printf("core pick: GPU %d, score %.2f\n", pick.gpu[0], sc);
  /* The FGD term of each GPU alone (the bonus adds at most 8 points). */
  vg_frag_fn f = vg_vgpu_measure_for(&w, &p);
  const struct vg_node *nn = &c.nodes[0];
  double before = f(&w, nn, nn->cpu_free, nn->mem_free, nn->gpu_free), term[2];
  for (int g = 0; g < 2; g++) {
    int t[VG_SCHED_MAX_GPUS] = {nn->gpu_free[0], nn->gpu_free[1]};
    t[g] -= p.gpu_milli;
    double x = (before - f(&w, nn, nn->cpu_free - p.cpu, nn->mem_free - p.mem, t)) / 1000.0;
    term[g] = (double)(int64_t)(100.0 / (1.0 + exp(-x)));
  }
  *margin = term[pick.gpu[0]] - term[1 - pick.gpu[0]];
  printf("FGD terms: GPU 0 %.0f, GPU 1 %.0f\n", term[0], term[1]);
  vg_sched_free(&sched);
  vg_cluster_free(&c);
  vg_workload_free(&w);
  return pick.gpu[0];
}

static void bind_new(const char *name, const char *annotations, const char *node) {
  char *p = pod_req_json(name, REQ, SHARE("30"), annotations, NULL, NULL);
  ext_admin("/_test/pods", p);
  free(p);
  json_object *res = ext_bind(name, node);
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
}

static void test_bind_writes_policy_pick(void **s) {
  (void)s;
  teach(10); /* the workload: 60 % shares (already counted: the same UIDs) */
  double margin;
  int want = core_pick((const int[2]){1000, 700}, &margin);
  /* The in-process pick keeps the 700 free for a 60 % share and cuts the
   * whole GPU (1000 -> 700); binpack would cut GPU 1 to 400, useless to
   * the workload. The margin makes the answer independent of the bonus. */
  assert_int_equal(want, 0);
  assert_true(margin > 8);
  bind_new("pick-policy", NULL, "pick");
  char *a = ext_assigned("pick-policy");
  ext_expect_contains(a, "\"uuid\":\"GPU-pick-0\"");
  free(a);
  /* The pod's GPU policy annotation still decides when given. */
  bind_new("pick-binpack", "\"vgpu.io/gpu-scheduler-policy\":\"binpack\"", "pick2");
  a = ext_assigned("pick-binpack");
  ext_expect_contains(a, "\"uuid\":\"GPU-pick2-1\"");
  free(a);
}

/* While the watches are synced, bind reads only the Pod from the API: the
 * node's view comes from the store, which holds our own binds from the
 * moment they succeed (before, each bind also read the Node and listed the
 * node's pods: a list every pod of the cluster is scanned for in etcd). The
 * second bind still sees the first: the GPU is not handed out twice. */
static void test_bind_reads_store(void **s) {
  (void)s;
  add_node_alloc("solo", 1, "64", "256Gi");
  for (int i = 0; i < 2; i++) {
    char name[16];
    snprintf(name, sizeof(name), "solo-%d", i);
    char *p = pod_req_json(name, REQ, SHARE("60"), NULL, NULL, NULL);
    ext_admin("/_test/pods", p);
    free(p);
  }
  long before = ext_api_gets();
  json_object *res = ext_bind("solo-0", "solo");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  assert_int_equal(ext_api_gets() - before, 1); /* GET the pod */
  res = ext_bind("solo-1", "solo");
  ext_expect_contains(ext_bind_error(res), "needs 1 GPUs each with 60 percent");
  json_object_put(res);
}

/* Prioritize reserves what bind will write on the node it ranked first:
 * the next pod's filter already sees it (kube-scheduler filters the next
 * pod while this one's bind is in flight), and the pod's own bind does not
 * count it twice. */
static void test_prioritize_reserves(void **s) {
  (void)s;
  add_node_alloc("resv", 1, "64", "256Gi");
  char *p = pod_req_json("resv-a", REQ, SHARE("60"), NULL, NULL, NULL);
  ext_admin("/_test/pods", p);
  free(p);
  json_object *res = call("/prioritize", "resv-a", SHARE("60"), NULL, "\"resv\"");
  assert_int_equal(ext_score(res, "resv"), 100);
  json_object_put(res);
  /* An event about the unbound pod (its creation reaching the watch late,
   * or a status update) does not undo the reservation. */
  p = pod_req_json("resv-a", REQ, SHARE("60"), "\"touched\":\"yes\"", NULL, NULL);
  ext_admin("/_test/pods", p);
  free(p);
  /* Another 60 % share no longer fits: resv-a holds 60 % until its bind. */
  res = call("/filter", "resv-b", SHARE("60"), NULL, "\"resv\"");
  assert_false(ext_has_name(res, "resv"));
  ext_expect_contains(ext_failed_reason(res, "resv"), "needs 1 GPUs each with 60 percent");
  json_object_put(res);
  res = ext_bind("resv-a", "resv");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  char *a = ext_assigned("resv-a");
  ext_expect_contains(a, "\"uuid\":\"GPU-resv-0\"");
  free(a);
}

/* kube-scheduler skips prioritize when one node fits: when filter narrows
 * several candidates to one, it reserves there instead ("solo" is full
 * after test_bind_reads_store). A request naming one node reserves nothing
 * (a probe as often as kube-scheduler's). */
static void test_sole_fit_reserves(void **s) {
  (void)s;
  add_node_alloc("resv-sole", 1, "64", "256Gi");
  for (int i = 0; i < 3; i++) { /* one candidate: no reservation */
    json_object *res = call("/filter", "probe", SHARE("60"), NULL, "\"resv-sole\"");
    assert_true(ext_has_name(res, "resv-sole"));
    json_object_put(res);
  }
  json_object *res = call("/filter", "sole-a", SHARE("60"), NULL, "\"resv-sole\",\"solo\"");
  assert_true(ext_has_name(res, "resv-sole"));
  assert_false(ext_has_name(res, "solo"));
  json_object_put(res);
  res = call("/filter", "sole-b", SHARE("60"), NULL, "\"resv-sole\",\"solo\"");
  assert_false(ext_has_name(res, "resv-sole"));
  json_object_put(res);
}

/* A pod that asks for no GPU but names a managed resource (nvidia.com/gpu
 * 0) reaches the extender: it is ranked by the policy like any other, on
 * nodes with and without an inventory. */
static void test_gpu_less_pod(void **s) {
  (void)s;
  ext_add_node("no-inventory", 0, 0, "", "[]", 0);
  json_object *res = call("/filter", "cpu-only", "\"nvidia.com/gpu\":\"0\"", NULL,
                          "\"twin-a\",\"no-inventory\",\"cpu-free\"");
  assert_true(ext_has_name(res, "twin-a") && ext_has_name(res, "no-inventory"));
  json_object_put(res);
  res = call("/prioritize", "cpu-only", "\"nvidia.com/gpu\":\"0\"", NULL,
             "\"twin-a\",\"no-inventory\",\"cpu-free\"");
  printf("prioritize: %s\n", json_object_to_json_string(res));
  assert_true(ext_score(res, "twin-a") > 0 && ext_score(res, "no-inventory") > 0);
  json_object_put(res);
  char *p = pod_req_json("cpu-only", REQ, "\"nvidia.com/gpu\":\"0\"", NULL, NULL, NULL);
  ext_admin("/_test/pods", p);
  free(p);
  res = ext_bind("cpu-only", "no-inventory");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workload_learned),  cmocka_unit_test(test_cpu_counted),
      cmocka_unit_test(test_ranks_no_ties),     cmocka_unit_test(test_bind_writes_policy_pick),
      cmocka_unit_test(test_bind_reads_store),  cmocka_unit_test(test_prioritize_reserves),
      cmocka_unit_test(test_sole_fit_reserves), cmocka_unit_test(test_gpu_less_pod),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}

/* test_sched_trace.c -- the trace CSV loader's errors (file:line and why)
 * and tiny replays whose outcome is known exactly; the pieces the real
 * scheduler's benchmark is made of: node subsets, one seed's arrival list,
 * a list placed in its order, nodes written back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

#define NODES_HEADER "sn,cpu_milli,memory_mib,gpu,model\n"
#define PODS_HEADER "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"

static char path[64];

static const char *write_csv(const char *text) {
  strcpy(path, "/tmp/vg-sched-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return path;
}

/* Loading text as nodes (or pods) fails with a message containing want. */
static void expect_error(int pods, const char *text, const char *want) {
  struct vg_cluster c;
  struct vg_err err = {""};
  struct vg_pod *p = NULL;
  int n = 0;
  vg_cluster_init(&c);
  const char *f = write_csv(text);
  int rc = pods ? vg_trace_load_pods(f, &c, &p, &n, &err) : vg_trace_load_nodes(f, &c, &err);
  unlink(f);
  assert_int_equal(rc, -1);
  if (!strstr(err.msg, want)) fail_msg("error '%s' lacks '%s'", err.msg, want);
  assert_non_null(strstr(err.msg, "/tmp/vg-sched-"));
  vg_cluster_free(&c);
}

static void test_node_csv_errors(void **state) {
  (void)state;
  expect_error(0, "sn,cpu_milli,gpu,model\nn0,1000,1,T4\n", ":1: no column 'memory_mib'");
  expect_error(0, NODES_HEADER "n0,1000,2048,1,T4\nn1,abc,2048,1,T4\n",
               ":3: cpu_milli: 'abc' is not an integer");
  expect_error(0, NODES_HEADER "n0,1000,2048,1\n", ":2: 4 fields, but the header has 5");
  expect_error(0, NODES_HEADER "n0,1000,2048,2,\n", ":2: model: empty for a node with 2 GPUs");
  expect_error(0, NODES_HEADER "n0,1000,2048,17,T4\n", ":2: gpu: 17 is out of range 0..16");
  expect_error(0, NODES_HEADER, "no nodes");
  expect_error(0, "", "empty file");
  struct vg_err err;
  struct vg_cluster c;
  vg_cluster_init(&c);
  assert_int_equal(vg_trace_load_nodes("/nonexistent/nodes.csv", &c, &err), -1);
  assert_non_null(strstr(err.msg, "/nonexistent/nodes.csv: cannot open"));
}

static void test_pod_csv_errors(void **state) {
  (void)state;
  expect_error(1, PODS_HEADER "p0,1000,2048,1,1001,\n", ":2: gpu_milli: 1001 is out of range");
  expect_error(1, PODS_HEADER "p0,1000,2048,1,0,\n", ":2: num_gpu 1 with gpu_milli 0");
  expect_error(1, PODS_HEADER "p0,-5,2048,0,0,\n", ":2: cpu_milli: -5 is out of range");
  expect_error(1, PODS_HEADER "p0,1000,2048,0,0\n", ":2: 5 fields, but the header has 6");
  expect_error(1, "name,cpu_milli,memory_mib,num_gpu\n", ":1: no column 'gpu_milli'");
}

static void test_load_trace(void **state) {
  (void)state;
  struct vg_cluster c;
  struct vg_pod *pods;
  int n;
  vg_cluster_init(&c);
  const char *f = write_csv(NODES_HEADER "n0,96000,393216,8,G2\r\n\nn1,64000,262144,0,\n");
  assert_int_equal(vg_trace_load_nodes(f, &c, NULL), 0);
  unlink(f);
  assert_int_equal(c.n, 2);
  assert_int_equal(c.nodes[0].ngpu, 8);
  assert_int_equal(c.nodes[0].gpu_free[7], 1000);
  assert_int_equal(c.nodes[1].model, -1);
  f = write_csv(PODS_HEADER "p0,1000,2048,1,500,T4|G2\np1,2000,0,0,0,\n");
  assert_int_equal(vg_trace_load_pods(f, &c, &pods, &n, NULL), 0);
  unlink(f);
  assert_int_equal(n, 2);
  assert_int_equal(pods[0].gpu_milli, 500);
  assert_int_equal(pods[0].models, (1u << vg_cluster_model(&c, "T4", NULL)) | 1u);
  assert_int_equal(pods[1].models, 0);
  free(pods);
  vg_cluster_free(&c);
}

static void tiny_cluster(struct vg_cluster *c, int nodes, int gpus) {
  vg_cluster_init(c);
  for (int i = 0; i < nodes; i++) {
    struct vg_node n = {.cpu_cap = 96000, .mem_cap = 393216, .ngpu = gpus};
    snprintf(n.name, sizeof(n.name), "n%d", i);
    n.model = vg_cluster_model(c, "G2", NULL);
    vg_cluster_add_node(c, &n, NULL);
  }
}

/* Whole GPUs: the outcome does not depend on the order. Two 1-GPU pods on
 * two 1-GPU nodes, tuned to 150%: one clone is added and fails. */
static void test_replay_whole_gpus(void **state) {
  (void)state;
  struct vg_cluster c;
  tiny_cluster(&c, 2, 1);
  struct vg_pod pods[2] = {{1000, 1024, 1, 1000, 0}, {2000, 1024, 1, 1000, 0}};
  struct vg_workload w;
  assert_int_equal(vg_workload_build(&w, pods, 2, 95.0, NULL), 0);
  struct vg_replay_result r;
  for (int k = 0; k < 2; k++) {
    const struct vg_policy *pol = vg_policy_find(k ? "fgd" : "bestfit");
    assert_int_equal(vg_replay_run(&c, pods, 2, &w, pol, 42, 1.5, &r, NULL), 0);
    assert_int_equal(r.pods, 3);
    assert_int_equal(r.placed, 2);
    assert_int_equal(r.failed, 1);
    assert_true(r.curve[50] == 50.0 && r.curve[100] == 0.0 && r.curve[150] == 0.0);
    assert_true(r.unallocated_at_100 == 0.0);
    assert_true(isnan(r.curve[10]));
  }
  assert_int_equal(c.nodes[0].gpu_free[0], 1000); /* the run works on a copy */
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

/* Shares 400, 400, 600, 600 on one 2-GPU node fill it exactly unless both
 * 400s land on one GPU first (leaving 200 + 1000). BestFit (tightest GPU)
 * does that for the orders starting 400, 400; FGD never does. */
static void test_replay_fgd_packs_shares(void **state) {
  (void)state;
  struct vg_cluster c;
  tiny_cluster(&c, 1, 2);
  struct vg_pod pods[4] = {
      {1000, 0, 1, 400, 0}, {1000, 0, 1, 400, 0}, {1000, 0, 1, 600, 0}, {1000, 0, 1, 600, 0}};
  struct vg_workload w;
  assert_int_equal(vg_workload_build(&w, pods, 4, 95.0, NULL), 0);
  struct vg_replay_result r, again;
  int bestfit_failures = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    assert_int_equal(vg_replay_run(&c, pods, 4, &w, vg_policy_find("fgd"), seed, 1.0, &r, NULL), 0);
    assert_int_equal(r.placed, 4);
    assert_true(r.unallocated_at_100 == 0.0);
    assert_int_equal(vg_replay_run(&c, pods, 4, &w, vg_policy_find("bestfit"), seed, 1.0, &r, NULL),
                     0);
    assert_int_equal(
        vg_replay_run(&c, pods, 4, &w, vg_policy_find("bestfit"), seed, 1.0, &again, NULL), 0);
    assert_int_equal(r.placed, again.placed); /* same seed, same run */
    bestfit_failures += r.failed;
    if (r.failed) assert_true(r.unallocated_at_100 == 30.0); /* one 600 share stranded */
  }
  assert_true(bestfit_failures > 0);
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

/* n nodes n0.. of one GPU each, CPU i+1 cores, alternately G2 and T4. */
static void named_cluster(struct vg_cluster *c, int n) {
  vg_cluster_init(c);
  for (int i = 0; i < n; i++) {
    struct vg_node node = {.cpu_cap = 1000 * (i + 1), .mem_cap = 4096, .ngpu = 1};
    snprintf(node.name, sizeof(node.name), "n%d", i);
    node.model = vg_cluster_model(c, i % 2 ? "T4" : "G2", NULL);
    vg_cluster_add_node(c, &node, NULL);
  }
}

/* Which of c's nodes sub holds, as a bit mask; sub keeps c's order. */
static unsigned subset_mask(const struct vg_cluster *c, const struct vg_cluster *sub) {
  unsigned mask = 0;
  int last = -1;
  for (int k = 0; k < sub->n; k++)
    for (int i = 0; i < c->n; i++)
      if (strcmp(c->nodes[i].name, sub->nodes[k].name) == 0) {
        assert_true(i > last); /* in the list's order */
        last = i;
        mask |= 1u << i;
        assert_int_equal(sub->nodes[k].cpu_cap, c->nodes[i].cpu_cap);
        assert_int_equal(sub->nodes[k].cpu_free, c->nodes[i].cpu_cap);
        assert_string_equal(sub->models[sub->nodes[k].model], c->models[c->nodes[i].model]);
      }
  return mask;
}

static void test_cluster_subset(void **state) {
  (void)state;
  struct vg_cluster c, sub, again;
  struct vg_err err;
  named_cluster(&c, 10);
  unsigned first = 0, other = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    assert_int_equal(vg_cluster_subset(&sub, &c, 4, seed, NULL), 0);
    assert_int_equal(sub.n, 4);
    assert_int_equal(sub.nmodels, c.nmodels);
    unsigned mask = subset_mask(&c, &sub);
    assert_int_equal(__builtin_popcount(mask), 4);
    assert_int_equal(vg_cluster_subset(&again, &c, 4, seed, NULL), 0);
    assert_int_equal(subset_mask(&c, &again), mask); /* one seed, one subset */
    if (seed == 1) first = mask;
    if (mask != first) other++;
    vg_cluster_free(&again);
    vg_cluster_free(&sub);
  }
  assert_true(other > 0); /* seeds draw different subsets */
  assert_int_equal(vg_cluster_subset(&sub, &c, 10, 7, NULL), 0);
  assert_int_equal(subset_mask(&c, &sub), 0x3ffu);
  vg_cluster_free(&sub);
  assert_int_equal(vg_cluster_subset(&sub, &c, 11, 7, &err), -1);
  assert_non_null(strstr(err.msg, "a subset of 11 nodes of a cluster of 10"));
  assert_int_equal(vg_cluster_subset(&sub, &c, 0, 7, &err), -1);
  vg_cluster_free(&c);
}

static void test_round_share(void **state) {
  (void)state;
  static const int in[] = {1, 9, 10, 11, 455, 460, 991, 995, 999};
  static const int out[] = {10, 10, 10, 20, 460, 460, 1000, 1000, 1000};
  for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
    struct vg_pod p = {1000, 0, 1, in[i], 0};
    vg_pod_round_share(&p);
    assert_int_equal(p.gpu_milli, out[i]);
    assert_int_equal(p.num_gpu, 1);
  }
  struct vg_pod whole = {1000, 0, 2, 1000, 0}, cpu = {1000, 0, 0, 0, 0};
  vg_pod_round_share(&whole);
  vg_pod_round_share(&cpu);
  assert_int_equal(whole.gpu_milli, 1000);
  assert_int_equal(cpu.gpu_milli, 0);
}

/* The arrival list is the replay's own order, rounded, cut where the GPU
 * request first reaches the capacity (10 one-GPU nodes: 10,000 milli). */
static void test_arrival(void **state) {
  (void)state;
  struct vg_cluster c;
  named_cluster(&c, 10);
  struct vg_pod pods[6] = {{1000, 0, 1, 455, 0}, {1000, 0, 1, 995, 0}, {1000, 0, 1, 1000, 0},
                           {2000, 0, 0, 0, 0},   {1000, 0, 1, 1, 0},   {1000, 0, 2, 1000, 0}};
  for (uint64_t seed = 1; seed <= 10; seed++) {
    struct vg_pod *order, *arr;
    int n = vg_replay_order(&c, pods, 6, seed, 1.3, &order, NULL), na;
    assert_true(n > 6);
    assert_int_equal(vg_replay_arrival(&c, pods, 6, seed, 1.3, &arr, &na, NULL), 0);
    assert_true(na > 0 && na <= n);
    int64_t sum = 0;
    for (int k = 0; k < na; k++) {
      struct vg_pod want = order[k];
      vg_pod_round_share(&want);
      assert_memory_equal(&arr[k], &want, sizeof(want)); /* the replay's order */
      if (arr[k].num_gpu == 1) assert_int_equal(arr[k].gpu_milli % 10, 0);
      if (k == na - 1) assert_true(sum < 10000); /* not reached before the last */
      sum += (int64_t)arr[k].num_gpu * arr[k].gpu_milli;
    }
    assert_true(sum >= 10000); /* reached at the last */
    free(order);
    free(arr);
  }
  vg_cluster_free(&c);
}

/* One node, one GPU: 400, 700, 600 in this order places 400 and 600 (full);
 * 700, 400, 600 places only 700 (30 % left). No seed reorders them. */
static void test_in_order(void **state) {
  (void)state;
  struct vg_cluster c;
  tiny_cluster(&c, 1, 1);
  struct vg_pod fills[3] = {{1000, 0, 1, 400, 0}, {1000, 0, 1, 700, 0}, {1000, 0, 1, 600, 0}};
  struct vg_pod strands[3] = {{1000, 0, 1, 700, 0}, {1000, 0, 1, 400, 0}, {1000, 0, 1, 600, 0}};
  struct vg_workload w;
  assert_int_equal(vg_workload_build(&w, fills, 3, 95.0, NULL), 0);
  struct vg_replay_result r;
  for (uint64_t seed = 1; seed <= 10; seed++) {
    for (int k = 0; k < 3; k++) {
      const struct vg_policy *pol = vg_policy_find(k == 0 ? "vgpu" : k == 1 ? "fgd" : "bestfit");
      assert_int_equal(vg_replay_in_order(&c, fills, 3, &w, pol, seed, &r, NULL), 0);
      assert_int_equal(r.pods, 3);
      assert_int_equal(r.placed, 2);
      assert_true(r.final_unallocated == 0.0 && r.final_arrived == 170.0);
      assert_int_equal(vg_replay_in_order(&c, strands, 3, &w, pol, seed, &r, NULL), 0);
      assert_int_equal(r.placed, 1);
      assert_true(fabs(r.final_unallocated - 30.0) < 1e-9);
    }
  }
  assert_int_equal(c.nodes[0].gpu_free[0], 1000); /* the run works on a copy */
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

static void test_write_nodes(void **state) {
  (void)state;
  struct vg_cluster c, back;
  named_cluster(&c, 3);
  struct vg_node cpu_only = {.name = "c0", .cpu_cap = 8000, .mem_cap = 1024, .model = -1};
  vg_cluster_add_node(&c, &cpu_only, NULL);
  strcpy(path, "/tmp/vg-sched-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(vg_trace_write_nodes(path, &c, NULL), 0);
  vg_cluster_init(&back);
  assert_int_equal(vg_trace_load_nodes(path, &back, NULL), 0);
  unlink(path);
  assert_int_equal(back.n, 4);
  for (int i = 0; i < 4; i++) {
    assert_string_equal(back.nodes[i].name, c.nodes[i].name);
    assert_int_equal(back.nodes[i].cpu_cap, c.nodes[i].cpu_cap);
    assert_int_equal(back.nodes[i].mem_cap, c.nodes[i].mem_cap);
    assert_int_equal(back.nodes[i].ngpu, c.nodes[i].ngpu);
    if (c.nodes[i].ngpu)
      assert_string_equal(back.models[back.nodes[i].model], c.models[c.nodes[i].model]);
  }
  assert_int_equal(back.nodes[3].model, -1);
  vg_cluster_free(&back);
  vg_cluster_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_node_csv_errors),
      cmocka_unit_test(test_pod_csv_errors),
      cmocka_unit_test(test_load_trace),
      cmocka_unit_test(test_replay_whole_gpus),
      cmocka_unit_test(test_replay_fgd_packs_shares),
      cmocka_unit_test(test_cluster_subset),
      cmocka_unit_test(test_round_share),
      cmocka_unit_test(test_arrival),
      cmocka_unit_test(test_in_order),
      cmocka_unit_test(test_write_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_sched_trace.c -- the trace CSV loader's errors (file:line and why)
 * and tiny replays whose outcome is known exactly. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_node_csv_errors),
      cmocka_unit_test(test_pod_csv_errors),
      cmocka_unit_test(test_load_trace),
      cmocka_unit_test(test_replay_whole_gpus),
      cmocka_unit_test(test_replay_fgd_packs_shares),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

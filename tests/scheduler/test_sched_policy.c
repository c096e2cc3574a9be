/* test_sched_policy.c -- BestFit and FGD on hand-built clusters where the
 * right choice is known, the fragmentation measure, the target workload,
 * and tie-breaking by node rank. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sched_fixture.h"

static int place(struct vg_cluster *c, const char *policy, const struct vg_workload *w,
                 const struct vg_pod *p) {
  struct vg_sched s;
  assert_int_equal(vg_sched_init(&s, c, vg_policy_find(policy), w, NULL), 0);
  int i = vg_sched_place(&s, p);
  vg_sched_free(&s);
  return i;
}

/* A workload of one task type (count pods of spec p). */
static void one_type(struct vg_workload *w, struct vg_pod p) {
  assert_int_equal(vg_workload_build(w, &p, 1, 95.0, NULL), 0);
}

static void test_bestfit_picks_the_tightest_node(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 2, 1000, 1000);
  add_node(&c, "G2", 96000, 393216, 2, 1000, 300); /* tightest by GPU */
  add_node(&c, "G2", 96000, 393216, 2, 1000, 700);
  struct vg_pod p = pod(4000, 1024, 1, 250);
  assert_int_equal(place(&c, "bestfit", NULL, &p), 1);
  assert_int_equal(c.nodes[1].gpu_free[1], 50); /* on the tightest GPU */
  assert_int_equal(c.nodes[1].gpu_free[0], 1000);
  vg_cluster_free(&c);
}

static void test_bestfit_weighs_cpu_too(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 128000, 393216, 1, 1000);
  add_node(&c, "G2", 8000, 393216, 1, 1000); /* same GPU, far less CPU left */
  struct vg_pod p = pod(4000, 1024, 1, 1000);
  assert_int_equal(place(&c, "bestfit", NULL, &p), 1);
  vg_cluster_free(&c);
}

static void test_ties_go_to_the_lowest_rank(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 1, 1000);
  add_node(&c, "G2", 96000, 393216, 1, 1000);
  c.nodes[0].rank = 7;
  c.nodes[1].rank = 3;
  struct vg_pod p = pod(1000, 1024, 1, 1000);
  assert_int_equal(place(&c, "bestfit", NULL, &p), 1);
  vg_cluster_free(&c);
}

static void test_workload_keeps_the_popular_types(void **state) {
  (void)state;
  struct vg_pod pods[20];
  for (int i = 0; i < 19; i++) pods[i] = pod(4000, 100 + i, 1, 500); /* memory is no key */
  pods[19] = pod(0, 0, 0, 0);
  struct vg_workload w;
  assert_int_equal(vg_workload_build(&w, pods, 20, 95.0, NULL), 0);
  assert_int_equal(w.n, 1); /* 19/20 = 95% covered by the first type */
  assert_int_equal(w.types[0].count, 19);
  assert_true(w.types[0].weight == 1.0);
  vg_workload_free(&w);
  assert_int_equal(vg_workload_build(&w, pods, 20, 99.0, NULL), 0);
  assert_int_equal(w.n, 2);
  assert_int_equal(w.types[1].pod.cpu, 100); /* a zero CPU request counts as 100m */
  assert_true(w.types[1].weight == 0.05);
  vg_workload_free(&w);
}

static void test_frag_measure(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 8000, 393216, 2, 1000, 400);
  struct vg_pod pods[2] = {pod(1000, 0, 0, 0), pod(1000, 0, 1, 1000)};
  struct vg_workload w;
  assert_int_equal(vg_workload_build(&w, pods, 2, 95.0, NULL), 0);
  const struct vg_node *n = &c.nodes[0];
  /* CPU-only type: all 1400 free milli; whole-GPU type fits: the 400 left over. */
  assert_true(vg_frag_node(&w, n, n->cpu_free, n->mem_free, n->gpu_free) == 0.5 * 1400 + 0.5 * 400);
  /* Without CPU for the whole-GPU type, all free GPU is fragment. */
  assert_true(vg_frag_node(&w, n, 500, n->mem_free, n->gpu_free) == 1400);
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

/* The workload is 500-milli shares. A 400 share on the node with 800 free
 * (BestFit's choice) would leave 400 that no typical task can use; FGD puts
 * it on the whole GPU, leaving 600 that still fits one. */
static void test_fgd_avoids_an_unusable_fragment(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(1000, 0, 1, 500));
  struct vg_pod p = pod(1000, 1024, 1, 400);
  for (int k = 0; k < 2; k++) {
    struct vg_cluster c;
    vg_cluster_init(&c);
    add_node(&c, "G2", 96000, 393216, 1, 800);
    add_node(&c, "G2", 96000, 393216, 1, 1000);
    assert_int_equal(place(&c, k ? "fgd" : "bestfit", &w, &p), k ? 1 : 0);
    vg_cluster_free(&c);
  }
  vg_workload_free(&w);
}

/* Within a node FGD picks the GPU whose leftover stays usable: the tightest
 * GPU (BestFit's choice) would be left with 500, too small for a 600 task. */
static void test_fgd_picks_the_gpu(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(1000, 0, 1, 600));
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 2, 1000, 800);
  struct vg_pod p = pod(1000, 1024, 1, 300);
  assert_int_equal(place(&c, "fgd", &w, &p), 0);
  assert_int_equal(c.nodes[0].gpu_free[0], 700);
  assert_int_equal(c.nodes[0].gpu_free[1], 800);
  vg_cluster_free(&c);
  vg_workload_free(&w);
}

static void test_no_fit_returns_minus_one(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 1, 300);
  struct vg_pod p = pod(1000, 1024, 1, 400);
  assert_int_equal(place(&c, "bestfit", NULL, &p), -1);
  assert_int_equal(c.nodes[0].gpu_free[0], 300);
  assert_null(vg_policy_find("nope"));
  vg_cluster_free(&c);
}

/* The recipe of docs/architecture.md, "A new placement policy", followed
 * with a toy: a policy is a score function and a struct vg_policy naming it.
 * "most-cpu" prefers the node with the most CPU left and takes the default
 * GPU choice; the placement core (filter, best score, apply) needs nothing
 * else. Registering it for --policy is one line in policy.c's table. */
static double score_most_cpu(struct vg_sched *s, int i, const struct vg_pod *p,
                             struct vg_pick *pick) {
  const struct vg_node *n = &s->cluster->nodes[i];
  vg_pick_tightest(n, p, pick);
  return (double)n->cpu_free / 1000.0;
}

static void test_toy_policy_from_the_recipe(void **state) {
  (void)state;
  static const struct vg_policy most_cpu = {"most-cpu", "the node with the most CPU left",
                                            score_most_cpu};
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 32000, 393216, 2, 1000, 1000);
  add_node(&c, "G2", 96000, 393216, 2, 1000, 300); /* most CPU; GPU 1 tightest */
  add_node(&c, "G2", 64000, 393216, 2, 1000, 1000);
  add_node(&c, "G2", 128000, 393216, 1, 100); /* more CPU, but no GPU fits */
  struct vg_sched s;
  assert_int_equal(vg_sched_init(&s, &c, &most_cpu, NULL, NULL), 0);
  struct vg_pod p = pod(4000, 1024, 1, 250);
  assert_int_equal(vg_sched_place(&s, &p), 1);
  assert_int_equal(c.nodes[1].gpu_free[1], 50); /* the default GPU choice: tightest */
  assert_int_equal(c.nodes[1].cpu_free, 92000);
  vg_sched_free(&s);
  vg_cluster_free(&c);
  /* the registered ones are all found by name, as --policy looks them up */
  for (const struct vg_policy *const *a = vg_policy_all(); *a; a++)
    assert_ptr_equal(vg_policy_find((*a)->name), *a);
  assert_null(vg_policy_find("most-cpu"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_toy_policy_from_the_recipe),
      cmocka_unit_test(test_bestfit_picks_the_tightest_node),
      cmocka_unit_test(test_bestfit_weighs_cpu_too),
      cmocka_unit_test(test_ties_go_to_the_lowest_rank),
      cmocka_unit_test(test_workload_keeps_the_popular_types),
      cmocka_unit_test(test_frag_measure),
      cmocka_unit_test(test_fgd_avoids_an_unusable_fragment),
      cmocka_unit_test(test_fgd_picks_the_gpu),
      cmocka_unit_test(test_no_fit_returns_minus_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

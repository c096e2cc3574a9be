/* test_sched_vgpu.c -- the `vgpu` policy against FGD on hand-built clusters:
 * its CPU-aware fragmentation measures (CPU caps how many GPUs a task type,
 * or only a share type, can use), memory that must fit as CPU must, and which
 * measure the mix selects, a CPU-only pod kept off the node whose CPU or
 * memory its free GPUs need, and the tie-breaks: where
 * the truncated scores tie, vgpu puts a share on the GPU it fills most exactly
 * and leaves a free share the cluster has few of (FGD: lowest GPU index, then
 * node rank); where the fragmentation change differs by a score point or
 * more, the fragmentation choice stands. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "sched_fixture.h"

static int place(struct vg_cluster *c, const char *policy, const struct vg_workload *w,
                 const struct vg_pod *p) {
  struct vg_sched s;
  const struct vg_policy *pol = vg_policy_find(policy);
  assert_non_null(pol);
  assert_int_equal(vg_sched_init(&s, c, pol, w, NULL), 0);
  int i = vg_sched_place(&s, p);
  vg_sched_free(&s);
  return i;
}

static void one_type(struct vg_workload *w, struct vg_pod p) {
  assert_int_equal(vg_workload_build(w, &p, 1, 95.0, NULL), 0);
}

/* Places p on a cluster from build under fgd, then on a fresh one under vgpu,
 * checking the nodes each chooses; leaves vgpu's cluster in *c (the caller
 * checks and frees it). */
static void fgd_then_vgpu(void (*build)(struct vg_cluster *), const struct vg_workload *w,
                          const struct vg_pod *p, int fgd_node, int vgpu_node,
                          struct vg_cluster *c) {
  build(c);
  assert_int_equal(place(c, "fgd", w, p), fgd_node);
  vg_cluster_free(c);
  build(c);
  assert_int_equal(place(c, "vgpu", w, p), vgpu_node);
}

/* Node 0 (rank 0) has a whole free GPU, node 1 (rank 1) a GPU with 600 free.
 * The target workload is CPU-only, so every placement of the 500-milli share
 * lowers F by exactly 500 on either node: FGD's scores tie and rank 0 wins,
 * breaking a whole GPU. vgpu fills node 1's GPU to 100 left and keeps the
 * whole GPU whole. */
static void cluster_tie(struct vg_cluster *c) {
  vg_cluster_init(c);
  add_node(c, "G2", 96000, 393216, 1, 1000);
  add_node(c, "G2", 96000, 393216, 1, 600);
  c->nodes[0].rank = 0;
  c->nodes[1].rank = 1;
}

static void test_ties_across_nodes_go_to_the_tightest_gpu(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(2000, 1024, 0, 0));
  struct vg_pod p = pod(1000, 1024, 1, 500);
  struct vg_cluster c;

  fgd_then_vgpu(cluster_tie, &w, &p, 0, 1, &c);
  assert_int_equal(c.nodes[1].gpu_free[0], 100);
  assert_int_equal(c.nodes[0].gpu_free[0], 1000);
  vg_cluster_free(&c);
  vg_workload_free(&w);
}

/* Within one node: GPUs {1000, 600}. FGD's per-GPU scores tie and it takes
 * the lowest index (the whole GPU); vgpu takes GPU 1. */
static void test_ties_within_a_node_go_to_the_tightest_gpu(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(2000, 1024, 0, 0));
  struct vg_pod p = pod(1000, 1024, 1, 500);
  struct vg_cluster c;

  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 2, 1000, 600);
  assert_int_equal(place(&c, "fgd", &w, &p), 0);
  assert_int_equal(c.nodes[0].gpu_free[0], 500);
  assert_int_equal(c.nodes[0].gpu_free[1], 600);
  vg_cluster_free(&c);

  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 2, 1000, 600);
  assert_int_equal(place(&c, "vgpu", &w, &p), 0);
  assert_int_equal(c.nodes[0].gpu_free[0], 1000);
  assert_int_equal(c.nodes[0].gpu_free[1], 100);
  vg_cluster_free(&c);
  vg_workload_free(&w);
}

/* The workload is 500-milli shares. Putting the share on node 0's 600-free
 * GPU strands 100 milli no 500 share can use (F +100, FGD score 47); on node
 * 1's whole GPU F does not change (score 50). The fit term (at most 5
 * points: 4.5 vs 2.5 here) does not overturn a 3-point fragmentation
 * difference: both policies choose node 1. */
static void test_fragmentation_outweighs_tightness(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(1000, 1024, 1, 500));
  struct vg_pod p = pod(1000, 1024, 1, 500);
  const char *policies[] = {"fgd", "vgpu"};
  for (int k = 0; k < 2; k++) {
    struct vg_cluster c;
    vg_cluster_init(&c);
    add_node(&c, "G2", 96000, 393216, 1, 600);
    add_node(&c, "G2", 96000, 393216, 1, 1000);
    c.nodes[0].rank = 0;
    c.nodes[1].rank = 1;
    assert_int_equal(place(&c, policies[k], &w, &p), 1);
    vg_cluster_free(&c);
  }
  vg_workload_free(&w);
}

/* A vgpu scheduler on one 2-GPU node with cpu milli-cores and GPUs of
 * free0 / free1 milli free, for workload w. */
static void one_node(struct vg_sched *s, struct vg_cluster *c, const struct vg_workload *w,
                     int64_t cpu, int free0, int free1) {
  vg_cluster_init(c);
  add_node(c, "G2", cpu, 393216, 2, free0, free1);
  assert_int_equal(vg_sched_init(s, c, vg_policy_find("vgpu"), w, NULL), 0);
}

/* Frees a test's scheduler, cluster and workload. */
static void free_all(struct vg_sched *s, struct vg_cluster *c, struct vg_workload *w) {
  vg_sched_free(s);
  vg_cluster_free(c);
  vg_workload_free(w);
}

/* With CPU to spare, the measures agree, so whole-GPU pods score exactly as
 * under FGD; and the policy is listed. */
static void test_whole_gpu_pods_score_as_fgd_when_cpu_is_plentiful(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(1000, 1024, 1, 500));
  struct vg_cluster c;
  struct vg_sched s;
  one_node(&s, &c, &w, 96000, 1000, 300);
  struct vg_pod p = pod(1000, 1024, 1, 1000);
  struct vg_pick a, b;
  double sa = vg_score_fgd(&s, 0, &p, &a), sb = vg_score_vgpu(&s, 0, &p, &b);
  assert_true(sa == sb);
  assert_int_equal(a.n, 1);
  assert_int_equal(b.n, 1);
  assert_int_equal(a.gpu[0], b.gpu[0]);
  free_all(&s, &c, &w);
  int found = 0;
  for (const struct vg_policy *const *q = vg_policy_all(); *q; q++)
    found += strcmp((*q)->name, "vgpu") == 0;
  assert_int_equal(found, 1);
}

/* The measure: one task type, 1 whole GPU and 10 cores. A node with 4 free
 * GPUs looks unfragmented to FGD as long as one copy fits; vg_frag_node_cpu
 * counts the GPUs the CPU cannot feed. For a 500-milli share type, the CPU
 * for one copy leaves only the GPU with the most free share usable. */
static void test_cpu_caps_the_usable_gpus(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(10000, 1024, 1, 1000));
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 4, 1000, 1000, 1000, 1000);
  const struct vg_node *n = &c.nodes[0];
  assert_true(vg_frag_node(&w, n, 10000, n->mem_free, n->gpu_free) == 0);
  assert_true(vg_frag_node_cpu(&w, n, 10000, n->mem_free, n->gpu_free) == 3000);
  assert_true(vg_frag_node_cpu(&w, n, 25000, n->mem_free, n->gpu_free) == 2000);
  assert_true(vg_frag_node_cpu(&w, n, 40000, n->mem_free, n->gpu_free) == 0);
  assert_true(vg_frag_node_cpu(&w, n, 9999, n->mem_free, n->gpu_free) == 4000);
  vg_workload_free(&w);

  one_type(&w, pod(10000, 1024, 1, 500));
  add_node(&c, "G2", 96000, 393216, 3, 300, 700, 1000);
  n = &c.nodes[1];
  assert_true(vg_frag_node(&w, n, 10000, n->mem_free, n->gpu_free) == 300);
  assert_true(vg_frag_node_cpu(&w, n, 10000, n->mem_free, n->gpu_free) == 1000);
  assert_true(vg_frag_node_cpu(&w, n, 20000, n->mem_free, n->gpu_free) == 300);
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

/* A cluster of one G2 node with 4 free GPUs, 96 cores and 384 GiB. */
static const struct vg_node *four_free_gpus(struct vg_cluster *c) {
  vg_cluster_init(c);
  add_node(c, "G2", 96000, 393216, 4, 1000, 1000, 1000, 1000);
  return &c->nodes[0];
}

/* F'_s caps the share types as F' does and counts whole-GPU types as F_mem
 * (F, where memory is plentiful) does: with CPU for one copy of a 10-core 1-GPU pod, a node with 4
 * free GPUs is unfragmented for it under F and F'_s, 3000 under F'. */
static void test_cpu_shares_caps_only_the_shares(void **state) {
  (void)state;
  struct vg_workload w;
  struct vg_cluster c;
  const struct vg_node *n = four_free_gpus(&c);
  one_type(&w, pod(10000, 1024, 1, 1000));
  assert_true(vg_frag_node_cpu(&w, n, 10000, n->mem_free, n->gpu_free) == 3000);
  assert_true(vg_frag_node_cpu_shares(&w, n, 10000, n->mem_free, n->gpu_free) == 0);
  assert_true(vg_frag_node_cpu_shares(&w, n, 9999, n->mem_free, n->gpu_free) == 4000);
  vg_workload_free(&w);
  one_type(&w, pod(10000, 1024, 2, 1000));
  assert_true(vg_frag_node_cpu(&w, n, 10000, n->mem_free, n->gpu_free) == 2000);
  assert_true(vg_frag_node_cpu_shares(&w, n, 10000, n->mem_free, n->gpu_free) == 0);
  vg_workload_free(&w);
  one_type(&w, pod(10000, 1024, 1, 500));
  assert_true(vg_frag_node_cpu_shares(&w, n, 10000, n->mem_free, n->gpu_free) == 3000);
  assert_true(vg_frag_node_cpu_shares(&w, n, 25000, n->mem_free, n->gpu_free) == 2000);
  assert_true(vg_frag_node_cpu(&w, n, 25000, n->mem_free, n->gpu_free) == 2000);
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

/* Memory: one task type, 1 whole GPU, 10 cores and 64 GiB. On a node with 4
 * free GPUs and 32 GiB free, FGD's F sees a fitting type (0); every vgpu
 * measure sees none of the GPUs usable (4000). With 64 GiB free, F_mem and
 * F'_s are 0 and F' keeps its CPU cap (CPU for one copy: 3000). A 500-milli
 * share type of 64 GiB is counted so by F' and F'_s too. */
static void test_memory_fits_as_cpu_does(void **state) {
  (void)state;
  struct vg_workload w;
  struct vg_cluster c;
  const struct vg_node *n = four_free_gpus(&c);
  const int64_t gib = 1024;
  one_type(&w, pod(10000, 64 * gib, 1, 1000));
  assert_true(vg_frag_node(&w, n, 10000, 32 * gib, n->gpu_free) == 0);
  assert_true(vg_frag_node_mem(&w, n, 10000, 32 * gib, n->gpu_free) == 4000);
  assert_true(vg_frag_node_cpu(&w, n, 10000, 32 * gib, n->gpu_free) == 4000);
  assert_true(vg_frag_node_cpu_shares(&w, n, 10000, 32 * gib, n->gpu_free) == 4000);
  assert_true(vg_frag_node_mem(&w, n, 10000, 64 * gib, n->gpu_free) == 0);
  assert_true(vg_frag_node_cpu_shares(&w, n, 10000, 64 * gib, n->gpu_free) == 0);
  assert_true(vg_frag_node_cpu(&w, n, 10000, 64 * gib, n->gpu_free) == 3000);
  vg_workload_free(&w);
  one_type(&w, pod(10000, 64 * gib, 1, 500));
  assert_true(vg_frag_node(&w, n, 40000, 32 * gib, n->gpu_free) == 0);
  assert_true(vg_frag_node_cpu(&w, n, 40000, 32 * gib, n->gpu_free) == 4000);
  assert_true(vg_frag_node_cpu_shares(&w, n, 40000, 32 * gib, n->gpu_free) == 4000);
  assert_true(vg_frag_node_cpu_shares(&w, n, 40000, 64 * gib, n->gpu_free) == 0);
  vg_workload_free(&w);
  vg_cluster_free(&c);
}

/* A task type's memory is the mean of its pods' (memory is not part of the
 * type's key): 1 and 3 GiB pods of the same shape make one type of 2 GiB. */
static void test_task_type_memory_is_the_mean(void **state) {
  (void)state;
  struct vg_pod pods[] = {pod(10000, 1024, 1, 1000), pod(10000, 3072, 1, 1000),
                          pod(4000, 512, 1, 500)};
  struct vg_workload w;
  assert_int_equal(vg_workload_build(&w, pods, 3, 100.0, NULL), 0);
  assert_int_equal(w.n, 2);
  assert_int_equal(w.types[0].count, 2);
  assert_int_equal(w.types[0].pod.mem, 2048);
  assert_int_equal(w.types[1].pod.mem, 512);
  vg_workload_free(&w);
}

/* The target workload is 1-GPU pods of 48 GiB. Node 0 (rank 0) and node 1
 * both have 2 free GPUs; node 0 has 64 GiB of memory, node 1 256 GiB. A
 * CPU-only pod of 32 GiB changes FGD's F on neither node, so rank 0 wins and
 * node 0's GPUs are left without the memory their pods need. vgpu's measure
 * counts those GPUs as stranded, so the pod goes to node 1. */
static void cluster_mem(struct vg_cluster *c) {
  vg_cluster_init(c);
  add_node(c, "G2", 96000, 64 * 1024, 2, 1000, 1000);
  add_node(c, "G2", 96000, 256 * 1024, 2, 1000, 1000);
  c->nodes[0].rank = 0;
  c->nodes[1].rank = 1;
}

static void test_cpu_only_pod_spares_the_memory_of_free_gpus(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(10000, 48 * 1024, 1, 1000));
  struct vg_pod p = pod(1000, 32 * 1024, 0, 0);
  struct vg_cluster c;

  fgd_then_vgpu(cluster_mem, &w, &p, 0, 1, &c);
  assert_int_equal(c.nodes[1].mem_free, 224 * 1024);
  assert_int_equal(c.nodes[0].mem_free, 64 * 1024);
  vg_cluster_free(&c);
  vg_workload_free(&w);
}

/* The target workload is 500-milli shares with 10 cores. Node 0 (rank 0) has
 * 2 free GPUs and 20 cores, node 1 has 1 free GPU and 30 cores. A 10-core
 * CPU-only pod leaves one share fitting on either node, so FGD's F stays 0 on
 * both, the scores tie and rank 0 wins: node 0 can then feed only one of its
 * two GPUs. Under vgpu's measure that strands a GPU on node 0 (F' +1000) and
 * nothing on node 1, so the pod goes to node 1. */
static void cluster_cpu(struct vg_cluster *c) {
  vg_cluster_init(c);
  add_node(c, "G2", 20000, 393216, 2, 1000, 1000);
  add_node(c, "G2", 30000, 393216, 2, 1000, 0);
  c->nodes[0].rank = 0;
  c->nodes[1].rank = 1;
}

static void test_cpu_only_pod_spares_the_cpu_of_free_gpus(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(10000, 1024, 1, 500));
  struct vg_pod p = pod(10000, 1024, 0, 0);
  struct vg_cluster c;

  fgd_then_vgpu(cluster_cpu, &w, &p, 0, 1, &c);
  assert_int_equal(c.nodes[1].cpu_free, 20000);
  assert_int_equal(c.nodes[0].cpu_free, 20000);
  vg_cluster_free(&c);
  vg_workload_free(&w);
}

/* Target workloads of two types: 500-milli shares of 10 cores, and `other`
 * with `count` pods against `n1` of the first. */
static void two_types(struct vg_workload *w, struct vg_pod other, int count, int n1) {
  struct vg_pod pods[100];
  int n = 0;
  for (int i = 0; i < n1; i++) pods[n++] = pod(10000, 1024, 1, 500);
  for (int i = 0; i < count; i++) pods[n++] = other;
  assert_int_equal(vg_workload_build(w, pods, n, 100.0, NULL), 0);
}

/* The GPU demand pinned to models and spanning GPUs, as the workload sees it:
 * 18 half-GPU shares and one pinned 1-GPU pod = 10 % pinned; one 2-GPU pod
 * against 36 shares = 10 % multi-GPU. */
static void test_workload_mix_shares(void **state) {
  (void)state;
  struct vg_workload w;
  struct vg_pod pinned = pod(10000, 1024, 1, 1000);
  pinned.models = 1;
  two_types(&w, pinned, 1, 18);
  assert_true(fabs(w.pinned_pct - 10.0) < 1e-9 && w.multi_pct == 0);
  vg_workload_free(&w);
  two_types(&w, pod(20000, 1024, 2, 1000), 1, 36);
  assert_true(fabs(w.multi_pct - 10.0) < 1e-9 && w.pinned_pct == 0);
  vg_workload_free(&w);
}

/* vgpu's measure follows the target workload's GPU demand: F' below 10 %
 * pinned and 10 % multi-GPU, F'_s below 10 % pinned from 10 % multi-GPU on,
 * FGD's F from 10 % pinned on. The CPU-only pod of
 * test_cpu_only_pod_spares_the_cpu_of_free_gpus goes where FGD puts it only
 * under F. check_measure checks both for workload w, then frees w. */
static void check_measure(struct vg_workload *w, vg_frag_fn want, int want_node) {
  const char *name = NULL;
  struct vg_pod p = pod(10000, 1024, 0, 0);
  struct vg_cluster c;
  assert_true(vg_vgpu_measure(w, &name) == want);
  assert_non_null(name);
  fgd_then_vgpu(cluster_cpu, w, &p, 0, want_node, &c);
  vg_cluster_free(&c);
  vg_workload_free(w);
}

static void test_measure_follows_the_mix(void **state) {
  (void)state;
  struct vg_workload w;
  struct vg_pod pinned = pod(10000, 1024, 1, 1000), two = pod(2000, 1024, 2, 1000);
  pinned.models = 1;
  two_types(&w, pinned, 1, 19); /* 9.5 % pinned */
  check_measure(&w, vg_frag_node_cpu, 1);
  two_types(&w, pinned, 1, 18); /* 10 % pinned */
  check_measure(&w, vg_frag_node_mem, 0);
  two_types(&w, two, 1, 38); /* 9.5 % on two GPUs */
  check_measure(&w, vg_frag_node_cpu, 1);
  two_types(&w, two, 1, 36); /* 10 % on two GPUs */
  check_measure(&w, vg_frag_node_cpu_shares, 1);
  assert_true(vg_vgpu_measure(NULL, NULL) == vg_frag_node_mem);
}

/* Under F'_s a pod of whole GPUs is placed on F_mem (FGD's F where memory
 * is plentiful, as here). The mix is 36
 * half-GPU shares of 10 cores and one 2-GPU pod (10 % multi-GPU, F'_s); the
 * node has 2 free GPUs and 15 cores. A 1-GPU pod of 5 cores leaves 1 GPU and
 * 10 cores: F stays 0 (the CPU admits a share before and after), while F'_s
 * drops by the GPU the CPU could not feed before. vgpu scores it as FGD. */
static void test_whole_gpu_pods_use_f_under_cpu_shares(void **state) {
  (void)state;
  struct vg_workload w;
  two_types(&w, pod(2000, 1024, 2, 1000), 1, 36);
  assert_true(vg_vgpu_measure(&w, NULL) == vg_frag_node_cpu_shares);
  struct vg_cluster c;
  struct vg_sched s;
  one_node(&s, &c, &w, 15000, 1000, 1000);
  struct vg_pod whole = pod(5000, 1024, 1, 1000), share = pod(5000, 1024, 1, 500);
  struct vg_pick a, b, d;
  double fgd = vg_score_fgd(&s, 0, &whole, &a), vgpu = vg_score_vgpu(&s, 0, &whole, &b);
  double on_fs = vg_fgd_score_by(&s, 0, &whole, &d, vg_frag_node_cpu_shares, NULL);
  assert_true(on_fs != fgd); /* the measures disagree here */
  assert_true(vgpu == fgd);
  assert_true(vg_vgpu_measure_for(&w, &whole) == vg_frag_node_mem);
  assert_true(vg_vgpu_measure_for(&w, &share) == vg_frag_node_cpu_shares);
  struct vg_pod cpu_only = pod(5000, 1024, 0, 0);
  assert_true(vg_vgpu_measure_for(&w, &cpu_only) == vg_frag_node_cpu_shares);
  free_all(&s, &c, &w);
}

/* The cache holds two measures at once, and a placement makes both stale:
 * each placement below changes one of them, after both were read. */
static void test_frag_cache_keeps_two_measures(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(10000, 1024, 1, 500));
  struct vg_cluster c;
  struct vg_sched s;
  one_node(&s, &c, &w, 15000, 1000, 1000);
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node) == 0);
  /* 15 cores feed one 10-core share's GPU: the other is stranded. */
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node_cpu_shares) == 1000);
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node) == 0);
  struct vg_pod no_cpu = pod(0, 1024, 1, 1000), cpu_only = pod(10000, 1024, 0, 0);
  assert_int_equal(vg_sched_place(&s, &no_cpu), 0); /* 1 GPU, 15 cores: fed */
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node_cpu_shares) == 0);
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node) == 0);
  assert_int_equal(vg_sched_place(&s, &cpu_only), 0); /* 1 GPU, 5 cores: no share fits */
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node) == 1000);
  assert_true(vg_sched_node_frag_by(&s, 0, vg_frag_node_cpu_shares) == 1000);
  free_all(&s, &c, &w);
}

/* vg_sched_gaps counts the cluster's GPUs by free share and vg_sched_place
 * keeps the count current. */
static void test_gaps_follow_placements(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(2000, 1024, 0, 0));
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 3, 1000, 600, 0);
  add_node(&c, "G2", 96000, 393216, 1, 600);
  struct vg_sched s;
  assert_int_equal(vg_sched_init(&s, &c, vg_policy_find("vgpu"), &w, NULL), 0);
  const int *n = vg_sched_gaps(&s);
  assert_int_equal(n[1000], 1);
  assert_int_equal(n[600], 2);
  assert_int_equal(n[0], 1);
  struct vg_pod p = pod(1000, 1024, 1, 500);
  assert_true(vg_sched_place(&s, &p) >= 0);
  n = vg_sched_gaps(&s);
  assert_int_equal(n[600], 1);
  assert_int_equal(n[100], 1);
  assert_int_equal(n[1000] + n[600] + n[100] + n[0], 4);
  free_all(&s, &c, &w);
}

/* The Sum-of-Squares term. A 300-milli share, CPU-only target workload (so
 * the fragmentation scores tie). Node 0 (rank 0) has a GPU with 700 free,
 * node 1 one with 710; three more GPUs with 400 free sit on nodes without the
 * CPU for the pod. Filling the 700 leaves a fourth 400 (dSS = +6), filling
 * the 710 leaves a 410 that nothing else has (dSS = 0). The fit term alone
 * (3.0 vs 2.95 points) and FGD's node rank would take node 0; vgpu takes
 * node 1. */
static void cluster_ss(struct vg_cluster *c) {
  vg_cluster_init(c);
  add_node(c, "G2", 96000, 393216, 1, 700);
  add_node(c, "G2", 96000, 393216, 1, 710);
  for (int k = 0; k < 3; k++) add_node(c, "G2", 500, 393216, 1, 400);
  for (int k = 0; k < c->n; k++) c->nodes[k].rank = (uint32_t)k;
}

static void test_ties_go_to_the_rarer_free_share(void **state) {
  (void)state;
  struct vg_workload w;
  one_type(&w, pod(2000, 1024, 0, 0));
  struct vg_pod p = pod(1000, 1024, 1, 300);
  struct vg_cluster c;

  fgd_then_vgpu(cluster_ss, &w, &p, 0, 1, &c);
  assert_int_equal(c.nodes[1].gpu_free[0], 410);
  vg_cluster_free(&c);
  vg_workload_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ties_across_nodes_go_to_the_tightest_gpu),
      cmocka_unit_test(test_ties_within_a_node_go_to_the_tightest_gpu),
      cmocka_unit_test(test_fragmentation_outweighs_tightness),
      cmocka_unit_test(test_whole_gpu_pods_score_as_fgd_when_cpu_is_plentiful),
      cmocka_unit_test(test_cpu_caps_the_usable_gpus),
      cmocka_unit_test(test_cpu_shares_caps_only_the_shares),
      cmocka_unit_test(test_cpu_only_pod_spares_the_cpu_of_free_gpus),
      cmocka_unit_test(test_memory_fits_as_cpu_does),
      cmocka_unit_test(test_task_type_memory_is_the_mean),
      cmocka_unit_test(test_cpu_only_pod_spares_the_memory_of_free_gpus),
      cmocka_unit_test(test_workload_mix_shares),
      cmocka_unit_test(test_measure_follows_the_mix),
      cmocka_unit_test(test_whole_gpu_pods_use_f_under_cpu_shares),
      cmocka_unit_test(test_frag_cache_keeps_two_measures),
      cmocka_unit_test(test_gaps_follow_placements),
      cmocka_unit_test(test_ties_go_to_the_rarer_free_share),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_sched_mix.c -- workload families (mix.c): each family reaches its
 * point while keeping what it should keep, the same seed gives the same pod
 * list, model lists are given only where a node can honour them, bad
 * --mix values are refused with a reason, and a written list reads back. */
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

#include "sched_fixture.h"
#include "trace.h"

/* Two models: T4 nodes with 2 GPUs, G2 nodes with 8. */
static void cluster(struct vg_cluster *c) {
  vg_cluster_init(c);
  add_node(c, "T4", 96000, 393216, 2, 1000, 1000);
  add_node(c, "G2", 96000, 393216, 8, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000);
}

/* A base of 100 pods: 20 CPU-only, 40 whole single GPUs, 30 shares of 500,
 * 6 of 2 GPUs, 4 of 8 GPUs. */
static int base(struct vg_pod *p) {
  int n = 0;
  for (int i = 0; i < 20; i++) p[n++] = pod(4000, 1024, 0, 0);
  for (int i = 0; i < 40; i++) p[n++] = pod(8000, 1024, 1, 1000);
  for (int i = 0; i < 30; i++) p[n++] = pod(2000, 1024, 1, 500);
  for (int i = 0; i < 6; i++) p[n++] = pod(16000, 1024, 2, 1000);
  for (int i = 0; i < 4; i++) p[n++] = pod(64000, 1024, 8, 1000);
  return n;
}

/* The pool adds model-constrained pods: 5 to T4, 5 to G2. */
static int pool(struct vg_cluster *c, struct vg_pod *p) {
  int n = base(p);
  for (int i = 0; i < 10; i++) {
    p[n] = pod(8000, 1024, 1, 1000);
    p[n++].models = 1u << (i < 5 ? 0 : 1);
  }
  (void)c;
  return n;
}

static int count(const struct vg_pod *p, int n, int num_gpu) {
  int k = 0;
  for (int i = 0; i < n; i++) k += p[i].num_gpu == num_gpu;
  return k;
}

static struct vg_pod *build(const char *arg, uint64_t seed, int *n) {
  struct vg_cluster c;
  struct vg_pod b[128], pl[160], *out = NULL;
  struct vg_mix m;
  struct vg_err err = {""};
  cluster(&c);
  int nb = base(b), np = pool(&c, pl);
  assert_int_equal(vg_mix_parse(arg, &m, &err), 0);
  m.seed = seed;
  if (vg_mix_build(&m, &c, b, nb, pl, np, &out, n, &err)) fail_msg("%s: %s", arg, err.msg);
  vg_cluster_free(&c);
  return out;
}

/* The base: 99,000 milli of GPU request, 44,000 of it multi-GPU (44.4 %),
 * 15,000 shared (15.2 %), none constrained; 20 % of pods CPU-only. */
static void test_base_measures(void **state) {
  (void)state;
  struct vg_pod b[128];
  int n = base(b);
  assert_true(fabs(vg_mix_measure(VG_MIX_MULTIGPU, b, n) - 100.0 * 44000 / 99000) < 0.01);
  assert_true(fabs(vg_mix_measure(VG_MIX_GPUSHARE, b, n) - 100.0 * 15000 / 99000) < 0.01);
  assert_true(vg_mix_measure(VG_MIX_GPUSPEC, b, n) == 0);
  assert_true(fabs(vg_mix_measure(VG_MIX_CPU, b, n) - 20.0) < 0.01);
}

/* multigpu adds multi-GPU pods (never removes others) up to the point. */
static void test_multigpu_adds_to_the_point(void **state) {
  (void)state;
  int n;
  struct vg_pod *p = build("multigpu=60", 7, &n);
  double got = vg_mix_measure(VG_MIX_MULTIGPU, p, n);
  assert_true(got >= 60 && got < 70); /* one 8-GPU pod is 8000 milli of ~30000 */
  assert_int_equal(count(p, n, 0), 20);
  assert_int_equal(count(p, n, 1), 70);
  assert_true(n > 100);
  free(p);
  p = build("multigpu=10", 7, &n); /* below the base's 44.4 %: multi-GPU pods removed */
  assert_true(vg_mix_measure(VG_MIX_MULTIGPU, p, n) <= 10);
  assert_int_equal(count(p, n, 1), 70);
  free(p);
}

/* gpushare keeps the pod count and turns whole GPUs into shares. */
static void test_gpushare_replaces_whole_gpus(void **state) {
  (void)state;
  int n;
  struct vg_pod *p = build("gpushare=60", 3, &n);
  assert_int_equal(n, 100);
  assert_true(vg_mix_measure(VG_MIX_GPUSHARE, p, n) >= 60);
  assert_int_equal(count(p, n, 0), 20);
  free(p);
  p = build("gpushare=100", 3, &n);
  assert_int_equal(n, 100);
  assert_true(vg_mix_measure(VG_MIX_GPUSHARE, p, n) == 100);
  assert_int_equal(count(p, n, 2) + count(p, n, 8), 0);
  free(p);
}

/* gpuspec gives model lists from the pool, never one no node satisfies:
 * an 8-GPU pod is never tied to T4 (2 GPUs per node). */
static void test_gpuspec_only_satisfiable_lists(void **state) {
  (void)state;
  int n;
  struct vg_pod *p = build("gpuspec=60", 11, &n);
  assert_int_equal(n, 100);
  double got = vg_mix_measure(VG_MIX_GPUSPEC, p, n);
  assert_true(got >= 60 && got < 75);
  for (int i = 0; i < n; i++) {
    if (p[i].num_gpu == 0) assert_int_equal(p[i].models, 0);
    if (p[i].num_gpu == 8) assert_true(p[i].models == 0 || p[i].models == 2u);
  }
  free(p);
}

/* cpu sets the share of CPU-only pods and keeps every GPU pod. */
static void test_cpu_share_of_pods(void **state) {
  (void)state;
  int n;
  struct vg_pod *p = build("cpu=50", 5, &n);
  assert_int_equal(n - count(p, n, 0), 80);
  assert_int_equal(count(p, n, 0), 80);
  free(p);
  p = build("cpu=5", 5, &n);
  assert_int_equal(count(p, n, 0), 4); /* 5/95 x 80 = 4.2 */
  free(p);
}

static int same(const struct vg_pod *a, int na, const struct vg_pod *b, int nb) {
  for (int i = 0; na == nb && i < na; i++)
    if (a[i].cpu != b[i].cpu || a[i].mem != b[i].mem || a[i].num_gpu != b[i].num_gpu ||
        a[i].gpu_milli != b[i].gpu_milli || a[i].models != b[i].models)
      return 0;
  return na == nb;
}

/* One (family, point, seed) is one pod list; another seed draws another. */
static void test_seeded(void **state) {
  (void)state;
  int n1, n2, n3;
  struct vg_pod *a = build("gpushare=50", 1, &n1), *b = build("gpushare=50", 1, &n2),
                *c = build("gpushare=50", 2, &n3);
  assert_true(same(a, n1, b, n2));
  assert_false(same(a, n1, c, n3));
  free(a), free(b), free(c);
}

static void expect_refused(const char *arg, const char *want) {
  struct vg_mix m;
  struct vg_err err = {""};
  assert_int_equal(vg_mix_parse(arg, &m, &err), -1);
  if (!strstr(err.msg, want)) fail_msg("'%s': error '%s' lacks '%s'", arg, err.msg, want);
}

static void test_bad_mix_refused(void **state) {
  (void)state;
  expect_refused("multigpu", "want FAMILY=PCT");
  expect_refused("bogus=10", "FAMILY one of multigpu, gpushare, gpuspec, cpu");
  expect_refused("multigpu=abc", "PCT must be a number from 0 to below 100");
  expect_refused("multigpu=100", "below 100");
  expect_refused("gpushare=101", "from 0 to 100");
  expect_refused("cpu=-1", "PCT must be");
  struct vg_mix m;
  assert_int_equal(vg_mix_parse("gpushare=100", &m, NULL), 0);
  assert_int_equal(m.family, VG_MIX_GPUSHARE);
}

/* A pool without the kind a family needs is an error, not a silent no-op. */
static void test_empty_pool_kind(void **state) {
  (void)state;
  struct vg_cluster c;
  struct vg_pod b[2] = {pod(1000, 1, 1, 1000), pod(1000, 1, 1, 1000)}, *out = NULL;
  struct vg_mix m = {VG_MIX_MULTIGPU, 50, 1};
  struct vg_err err = {""};
  int n;
  cluster(&c);
  assert_int_equal(vg_mix_build(&m, &c, b, 2, NULL, 0, &out, &n, &err), -1);
  assert_non_null(strstr(err.msg, "no multi-GPU pods"));
  m.family = VG_MIX_GPUSPEC;
  assert_int_equal(vg_mix_build(&m, &c, b, 2, NULL, 0, &out, &n, &err), -1);
  assert_non_null(strstr(err.msg, "no model-constrained pods"));
  vg_cluster_free(&c);
}

/* vg_trace_write_pods output loads back to the same pods. */
static void test_write_reads_back(void **state) {
  (void)state;
  struct vg_cluster c;
  struct vg_err err = {""};
  int n, m;
  struct vg_pod *p = build("gpuspec=40", 4, &n), *q = NULL;
  char path[] = "/tmp/vg-mix-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  cluster(&c);
  if (vg_trace_write_pods(path, &c, p, n, &err) || vg_trace_load_pods(path, &c, &q, &m, &err))
    fail_msg("%s", err.msg);
  unlink(path);
  assert_true(same(p, n, q, m));
  free(p), free(q);
  vg_cluster_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base_measures),
      cmocka_unit_test(test_multigpu_adds_to_the_point),
      cmocka_unit_test(test_gpushare_replaces_whole_gpus),
      cmocka_unit_test(test_gpuspec_only_satisfiable_lists),
      cmocka_unit_test(test_cpu_share_of_pods),
      cmocka_unit_test(test_seeded),
      cmocka_unit_test(test_bad_mix_refused),
      cmocka_unit_test(test_empty_pool_kind),
      cmocka_unit_test(test_write_reads_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

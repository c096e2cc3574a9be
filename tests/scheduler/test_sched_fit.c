/* test_sched_fit.c -- fit rules of the placement core: CPU, memory, GPU
 * model constraints, whole GPUs versus shares, and the default GPU choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sched_fixture.h"

static void test_cpu_and_memory_must_fit(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "T4", 8000, 16384, 1, 1000);
  struct vg_pod p = pod(8000, 16384, 1, 1000);
  assert_true(vg_fit(&c.nodes[0], &p));
  p.cpu = 8001;
  assert_false(vg_fit(&c.nodes[0], &p));
  p = pod(1000, 16385, 0, 0);
  assert_false(vg_fit(&c.nodes[0], &p));
  vg_cluster_free(&c);
}

static void test_gpu_model_constraint(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "T4", 8000, 16384, 1, 1000);
  add_node(&c, "V100", 8000, 16384, 1, 1000);
  add_node(&c, "", 8000, 16384, 0); /* CPU-only node */
  struct vg_pod p = pod(1000, 1024, 1, 500);
  p.models = 1u << vg_cluster_model(&c, "V100", NULL);
  assert_false(vg_fit(&c.nodes[0], &p));
  assert_true(vg_fit(&c.nodes[1], &p));
  assert_false(vg_fit(&c.nodes[2], &p));
  p.models = 0; /* any model, but a GPU is still needed */
  assert_true(vg_fit(&c.nodes[0], &p));
  assert_false(vg_fit(&c.nodes[2], &p));
  struct vg_pod cpu_only = pod(1000, 1024, 0, 0);
  assert_true(vg_fit(&c.nodes[2], &cpu_only));
  vg_cluster_free(&c);
}

static void test_whole_gpus_need_fully_free_gpus(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 3, 1000, 999, 1000);
  struct vg_pod two = pod(1000, 1024, 2, 1000), three = pod(1000, 1024, 3, 1000);
  assert_true(vg_fit(&c.nodes[0], &two));
  assert_false(vg_fit(&c.nodes[0], &three));
  struct vg_pick pick;
  assert_true(vg_pick_tightest(&c.nodes[0], &two, &pick));
  assert_int_equal(pick.n, 2);
  assert_int_equal(pick.gpu[0], 0);
  assert_int_equal(pick.gpu[1], 2);
  vg_node_apply(&c.nodes[0], &two, &pick);
  assert_int_equal(c.nodes[0].gpu_free[0], 0);
  assert_int_equal(c.nodes[0].gpu_free[1], 999);
  assert_int_equal(c.nodes[0].gpu_free[2], 0);
  assert_int_equal(c.nodes[0].cpu_free, 95000);
  vg_cluster_free(&c);
}

static void test_share_needs_one_gpu_with_room(void **state) {
  (void)state;
  struct vg_cluster c;
  vg_cluster_init(&c);
  add_node(&c, "G2", 96000, 393216, 3, 1000, 600, 300);
  struct vg_pod big = pod(1000, 1024, 1, 1000), small = pod(1000, 1024, 1, 250);
  assert_true(vg_fit(&c.nodes[0], &big));
  struct vg_pick pick;
  assert_true(vg_pick_tightest(&c.nodes[0], &small, &pick));
  assert_int_equal(pick.n, 1);
  assert_int_equal(pick.gpu[0], 2); /* the tightest GPU that fits */
  c.nodes[0].gpu_free[0] = 299;
  c.nodes[0].gpu_free[1] = 200;
  struct vg_pod p300 = pod(1000, 1024, 1, 300);
  assert_true(vg_fit(&c.nodes[0], &p300));
  p300.gpu_milli = 301; /* shares never span GPUs: 299 + 200 + 300 free is not enough */
  assert_false(vg_fit(&c.nodes[0], &p300));
  vg_cluster_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cpu_and_memory_must_fit),
      cmocka_unit_test(test_gpu_model_constraint),
      cmocka_unit_test(test_whole_gpus_need_fully_free_gpus),
      cmocka_unit_test(test_share_needs_one_gpu_with_room),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

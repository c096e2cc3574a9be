/*
 * test_audit_rules.c -- when the node agent calls a GPU's memory
 * unaccounted and a container unenforced (src/agent/audit_rules.h): the
 * idle baseline, the regions' charges, the contexts' allowance, the
 * tolerance, GPUs held by a container without a region, NVML hiccups, and
 * the flagged/cleared transitions that the log and the detection counter
 * follow.
 */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "audit_rules.h"

#define MIB (1ull << 20)
#define CTX (256 * MIB) /* allowance per process */
#define TOL (256 * MIB)

static struct vg_audit_reading reading(uint64_t used, bool held, uint64_t charged, unsigned procs) {
  struct vg_audit_reading r = {.nvml_ok = true,
                               .used = used,
                               .held = held,
                               .auditable = true,
                               .charged = charged,
                               .procs = procs};
  return r;
}

static enum vg_audit_change assess(struct vg_audit_reading r, struct vg_audit_gpu_state *st) {
  return vg_audit_assess(&r, CTX, TOL, st);
}

/* An idle GPU sets the baseline and is never flagged, whatever it holds. */
static void test_idle_gpu_is_the_baseline(void **state) {
  (void)state;
  struct vg_audit_gpu_state st = {0};
  assert_int_equal(assess(reading(900 * MIB, false, 0, 0), &st), VG_AUDIT_SAME);
  assert_true(st.baseline_seen);
  assert_int_equal(st.baseline, 900 * MIB);
  assert_int_equal(st.unaccounted, 0);
  assert_false(st.flagged);
  /* A container arrives; its charges plus the baseline are all there is. */
  assert_int_equal(assess(reading(900 * MIB + 2000 * MIB, true, 2000 * MIB, 1), &st),
                   VG_AUDIT_SAME);
  assert_int_equal(st.unaccounted, 0);
  assert_false(st.flagged);
}

/* Memory in use that no region charges: flagged once, cleared once. */
static void test_bypass_flagged_then_cleared(void **state) {
  (void)state;
  struct vg_audit_gpu_state st = {0};
  assess(reading(0, false, 0, 0), &st);
  /* 3 GiB in use, no process under libvgpu: all of it is unaccounted. */
  assert_int_equal(assess(reading(3072 * MIB, true, 0, 0), &st), VG_AUDIT_FLAGGED);
  assert_int_equal(st.unaccounted, 3072 * MIB);
  assert_true(st.flagged);
  /* Still there next pass: no second detection. */
  assert_int_equal(assess(reading(3072 * MIB, true, 0, 0), &st), VG_AUDIT_SAME);
  assert_true(st.flagged);
  /* Gone: cleared. */
  assert_int_equal(assess(reading(0, true, 0, 0), &st), VG_AUDIT_CLEARED);
  assert_false(st.flagged);
  assert_int_equal(st.unaccounted, 0);
}

/* Each process under libvgpu may hold a context's worth beyond its
 * charges; the tolerance on top of that is not a detection; one byte more is. */
static void test_contexts_and_tolerance(void **state) {
  (void)state;
  struct vg_audit_gpu_state st = {.baseline = 100 * MIB, .baseline_seen = true};
  uint64_t accounted = 100 * MIB + 1000 * MIB + 2 * CTX;
  assert_int_equal(assess(reading(accounted + TOL, true, 1000 * MIB, 2), &st), VG_AUDIT_SAME);
  assert_int_equal(st.unaccounted, TOL);
  assert_false(st.flagged);
  assert_int_equal(assess(reading(accounted + TOL + 1, true, 1000 * MIB, 2), &st),
                   VG_AUDIT_FLAGGED);
  assert_int_equal(st.unaccounted, TOL + 1);
}

/* Less in use than accounted for (memory freed between the two reads, a
 * context not created yet) is 0, never a wrapped huge number. */
static void test_never_negative(void **state) {
  (void)state;
  struct vg_audit_gpu_state st = {.baseline = 500 * MIB, .baseline_seen = true};
  assert_int_equal(assess(reading(100 * MIB, true, 4000 * MIB, 3), &st), VG_AUDIT_SAME);
  assert_int_equal(st.unaccounted, 0);
  assert_false(st.flagged);
  /* An absurd process count cannot overflow the allowance into a small number. */
  struct vg_audit_reading r = reading(8192 * MIB, true, 0, 4000000000u);
  assert_int_equal(vg_audit_assess(&r, UINT64_MAX / 2, TOL, &st), VG_AUDIT_SAME);
  assert_int_equal(st.unaccounted, 0);
}

/* A GPU a region-less container holds (time-slicing without isolation) is
 * not judged: its work is unaccounted by design. */
static void test_unauditable_gpu_not_flagged(void **state) {
  (void)state;
  struct vg_audit_gpu_state st = {.baseline_seen = true};
  struct vg_audit_reading r = reading(6000 * MIB, true, 0, 0);
  r.auditable = false;
  assert_int_equal(vg_audit_assess(&r, CTX, TOL, &st), VG_AUDIT_SAME);
  assert_false(st.flagged);
  assert_int_equal(st.unaccounted, 6000 * MIB); /* still computed, for the record */
  /* A flagged GPU that becomes unauditable is cleared. */
  st.flagged = true;
  assert_int_equal(vg_audit_assess(&r, CTX, TOL, &st), VG_AUDIT_CLEARED);
}

/* NVML not answering keeps the last verdict and the baseline. */
static void test_nvml_hiccup_keeps_state(void **state) {
  (void)state;
  struct vg_audit_gpu_state st = {0};
  assess(reading(50 * MIB, false, 0, 0), &st);
  assess(reading(4096 * MIB, true, 0, 0), &st);
  assert_true(st.flagged);
  struct vg_audit_reading r = {.nvml_ok = false, .held = false};
  assert_int_equal(vg_audit_assess(&r, CTX, TOL, &st), VG_AUDIT_SAME);
  assert_true(st.flagged);
  assert_int_equal(st.baseline, 50 * MIB);
}

/* Unenforced: flagged GPU, never joined, past the grace; nothing less. */
static void test_unenforced(void **state) {
  (void)state;
  assert_true(vg_audit_unenforced(true, false, 61, 60));
  assert_true(vg_audit_unenforced(true, false, 60, 60));
  assert_false(vg_audit_unenforced(true, false, 59.9, 60)); /* just allocated */
  assert_false(vg_audit_unenforced(true, true, 600, 60));   /* libvgpu loaded there */
  assert_false(vg_audit_unenforced(false, false, 600, 60)); /* an idle container */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_idle_gpu_is_the_baseline),
      cmocka_unit_test(test_bypass_flagged_then_cleared),
      cmocka_unit_test(test_contexts_and_tolerance),
      cmocka_unit_test(test_never_negative),
      cmocka_unit_test(test_unauditable_gpu_not_flagged),
      cmocka_unit_test(test_nvml_hiccup_keeps_state),
      cmocka_unit_test(test_unenforced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_scheduler_dialects.c -- vgpu-scheduler end to end, beyond the vgpu
 * dialect: fit and the assignment bind writes for gpushare (GiB and MiB
 * units), time-slicing (nvidia.com/gpu, nvidia.com/gpu.shared), CCE (128 MiB
 * units, core percentage, one isolation mode per GPU, slice cap) and vgpu's
 * gpumem-percentage; several dialects on one GPU sharing one account;
 * validation (refusals in FailedNodes and FailedAndUnresolvableNodes) and
 * FailedNodes reasons; GPU type/UUID selection;
 * binpack/spread at GPU and node level with the per-pod overrides; recorded
 * kube-scheduler request bodies fed verbatim; restart recovery; concurrent
 * filters and binds that must not double-book.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "ext_harness.h"

#define A100 "NVIDIA A100-SXM4-16GB"
#define T4 "Tesla T4"
#define VGPU16                                                                            \
  "{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"unit\":0,\"memory\":" \
  "17179869184,\"cores\":100}"
#define GS_GIB \
  "{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,\"unit\":1073741824}"
#define GS_MIB \
  "{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16384,\"unit\":1048576}"
#define TS4 "[{\"name\":\"nvidia.com/gpu\",\"dialect\":\"timeSlicing\",\"count\":4,\"unit\":0}]"
#define TS_SHARED2 \
  "[{\"name\":\"nvidia.com/gpu.shared\",\"dialect\":\"timeSlicing\",\"count\":2,\"unit\":0}]"
#define CCE_ENTRY(max)                                                                 \
  "{\"name\":\"volcano.sh/gpu-mem.128Mi\",\"dialect\":\"cce\",\"count\":128,\"unit\":" \
  "134217728,\"maxVgpus\":" #max "}"
#define CCE(max) "[" CCE_ENTRY(max) "]"
#define CCE_RES "volcano.sh/gpu-mem.128Mi"

/* Filter of a pod with these limits/annotations over names; the answer. */
static json_object *filter(const char *limits, const char *annotations, const char *names) {
  char *pod = ext_pod_json("probe", limits, annotations, NULL, NULL);
  char *body = ext_args_names(pod, names);
  json_object *res = ext_post("/filter", body, 200);
  free(body);
  free(pod);
  return res;
}

/* Filter over the one node must fail it with a reason containing part. */
static void expect_misfit(const char *limits, const char *annotations, const char *node,
                          const char *part) {
  char names[128];
  snprintf(names, sizeof(names), "\"%s\"", node);
  json_object *res = filter(limits, annotations, names);
  assert_false(ext_has_name(res, node));
  ext_expect_contains(ext_failed_reason(res, node), part);
  json_object_put(res);
}

/* A request no node can satisfy: 200 (kube-scheduler drops the body of
 * anything else), the node failed in both maps with a reason containing
 * part; no Error, which would fail the scheduling cycle instead. */
static void filter_refused(const char *limits, const char *annotations, const char *part) {
  json_object *res = filter(limits, annotations, "\"gs-a\"");
  ext_expect_refused(res, "gs-a", part);
  assert_int_equal(json_object_get_string_len(json_object_object_get(res, "Error")), 0);
  json_object_put(res);
}

/* Creates pod `name`, binds it to node; the bind Error ("" = bound). */
static char *bind_new(const char *name, const char *limits, const char *annotations,
                      const char *node) {
  ext_add_pod(name, limits, annotations, NULL, NULL);
  json_object *res = ext_bind(name, node);
  char *e = strdup(ext_bind_error(res));
  json_object_put(res);
  return e;
}

static void expect_bound(const char *name, const char *limits, const char *annotations,
                         const char *node) {
  char *e = bind_new(name, limits, annotations, node);
  if (e[0]) fail_msg("bind %s to %s: %s", name, node, e);
  free(e);
}

static void expect_assigned(const char *pod, const char *part) {
  char *a = ext_assigned(pod);
  ext_expect_contains(a, part);
  free(a);
}

/* ---- fixture ---- */

static int setup(void **state) {
  (void)state;
  if (ext_api_start() != 0) return -1;
  ext_add_node("gs-a", 2, 16, A100, "[" GS_GIB "]", 0);
  ext_add_holder("gs-a-holder", "gs-a", "aliyun.com/gpu-mem", "GPU-gs-a-0", 10 * EXT_GIB, 0);
  ext_add_node("gs-mib", 1, 16, A100, "[" GS_MIB "]", 0);
  ext_add_node("ts-a", 2, 16, T4, TS4, 0);
  ext_add_node("ts-shared", 1, 16, T4, TS_SHARED2, 0);
  ext_add_node("cce-a", 2, 16, A100, CCE(20), 0);
  ext_add_holder("cce-a-holder", "cce-a", CCE_RES, "GPU-cce-a-0", 8 * 134217728LL, 0);
  ext_add_node("cce-b", 1, 16, A100, CCE(2), 0);
  ext_add_holder("cce-b-1", "cce-b", CCE_RES, "GPU-cce-b-0", 134217728LL, 0);
  ext_add_holder("cce-b-2", "cce-b", CCE_RES, "GPU-cce-b-0", 134217728LL, 0);
  ext_add_node("mix", 1, 16, A100, "[" VGPU16 "," GS_GIB "]", 0);
  ext_add_holder("mix-holder", "mix", "nvidia.com/vgpu", "GPU-mix-0", 12 * EXT_GIB, 0);
  ext_add_node("t4-node", 1, 16, T4, "[" VGPU16 "]", 0);
  ext_add_node("a100-node", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("sel", 2, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("pack", 2, 16, A100, "[" VGPU16 "]", 0);
  ext_add_holder("pack-holder", "pack", "nvidia.com/vgpu", "GPU-pack-0", 4 * EXT_GIB, 25);
  ext_add_node("nl-busy", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_holder("nl-busy-holder", "nl-busy", "nvidia.com/vgpu", "GPU-nl-busy-0", 8 * EXT_GIB, 50);
  ext_add_node("nl-idle", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_context_reserve = 512 * 1048576LL; /* 512 MiB per slice for CUDA contexts */
  ext_add_node("ctx", 1, 16, A100, "[" VGPU16 "," CCE_ENTRY(20) "," GS_GIB "]", 0);
  ext_add_holder("ctx-holder", "ctx", "nvidia.com/vgpu", "GPU-ctx-0", 8 * EXT_GIB, 0);
  ext_add_node("ctx-alone", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_context_reserve = 0;
  ext_add_node("mc-small", 2, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("watch-n", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("nowatch-n", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("mc-big", 4, 16, A100, "[" VGPU16 "]", 0);
  ext_add_holder("mc-big-holder", "mc-big", "nvidia.com/vgpu", "GPU-mc-big-0", 8 * EXT_GIB, 50);
  ext_add_node("excl", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_holder("excl-holder", "excl", "nvidia.com/vgpu", "GPU-excl-0", EXT_GIB, 10);
  ext_add_node("rr", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("cc", 1, 16, A100,
               "[{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":8,\"unit\":0,"
               "\"memory\":17179869184,\"cores\":100}]",
               0);
  ext_add_node("bad-inv", 1, 16, A100,
               "[{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,"
               "\"unit\":-5}]",
               0);
  ext_add_node("huge", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("canon-v", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("canon-gs", 1, 16, A100, "[" GS_MIB "]", 0);
  ext_add_holder("huge-1", "huge", "nvidia.com/vgpu", "GPU-huge-0", 9000000000000000000LL, 0);
  ext_add_holder("huge-2", "huge", "nvidia.com/vgpu", "GPU-huge-0", 9000000000000000000LL, 0);
  return ext_sched_start(NULL);
}

/* ---- gpushare ---- */

/* Pod annotation key as the API server has it, "" when absent (a static copy). */
static const char *annotation(const char *pod, const char *key) {
  static char value[256];
  json_object *o = NULL, *ann, *v;
  struct vg_err err;
  if (vg_k8s_get_pod(ext_api, "default", pod, &o, &err) != 0) fail_msg("get %s: %s", pod, err.msg);
  value[0] = 0;
  if (json_object_object_get_ex(json_object_object_get(o, "metadata"), "annotations", &ann) &&
      json_object_object_get_ex(ann, key, &v))
    snprintf(value, sizeof(value), "%s", json_object_get_string(v));
  json_object_put(o);
  return value;
}

static long long now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* Aliyun's five annotations, written in the Binding, with its meanings and
 * units (extender_aliyun.c): IDX the chosen GPU's index, POD the pod's units,
 * DEV the GPU's units, ASSIGNED "false" (the node agent says "true"),
 * ASSUME_TIME the bind's time in Unix nanoseconds. */
static void expect_aliyun(const char *pod, const char *idx, const char *total, const char *dev,
                          long long before) {
  assert_string_equal(annotation(pod, "ALIYUN_COM_GPU_MEM_IDX"), idx);
  assert_string_equal(annotation(pod, "ALIYUN_COM_GPU_MEM_POD"), total);
  assert_string_equal(annotation(pod, "ALIYUN_COM_GPU_MEM_DEV"), dev);
  assert_string_equal(annotation(pod, "ALIYUN_COM_GPU_MEM_ASSIGNED"), "false");
  long long at = atoll(annotation(pod, "ALIYUN_COM_GPU_MEM_ASSUME_TIME"));
  assert_true(at >= before && at <= now_ns());
}

static void test_gpushare(void **s) {
  (void)s;
  json_object *res = filter("\"aliyun.com/gpu-mem\":\"20\"", NULL, "\"gs-a\",\"ts-a\"");
  ext_expect_contains(ext_failed_reason(res, "gs-a"),
                      "asks for 20480 MiB per GPU, the largest GPU here has 16384 MiB");
  ext_expect_contains(ext_failed_reason(res, "ts-a"),
                      "asks for aliyun.com/gpu-mem, which no GPU here advertises");
  json_object_put(res);
  /* GPU 0 has 6 GiB left: 8 GiB goes to GPU 1, 6 GiB fits GPU 0 (binpack). */
  long long before = now_ns();
  expect_bound("gs-8", "\"aliyun.com/gpu-mem\":\"8\"", NULL, "gs-a");
  expect_assigned("gs-8",
                  "\"resource\":\"aliyun.com/gpu-mem\",\"gpus\":[{\"uuid\":\"GPU-gs-a-1\","
                  "\"index\":1,\"memory\":8589934592,\"cores\":0}");
  expect_aliyun("gs-8", "1", "8", "16", before);
  expect_bound("gs-6", "\"aliyun.com/gpu-mem\":\"6\"", NULL, "gs-a");
  expect_assigned("gs-6", "\"uuid\":\"GPU-gs-a-0\"");
  expect_aliyun("gs-6", "0", "6", "16", before);
  /* Now 0 and 8 units free: 9 does not fit anywhere. */
  res = filter("\"aliyun.com/gpu-mem\":\"9\"", NULL, "\"gs-a\"");
  assert_false(ext_has_name(res, "gs-a"));
  ext_expect_contains(ext_failed_reason(res, "gs-a"), "needs 1 GPUs each with 9 units");
  json_object_put(res);
  /* MiB units: seed 002's 3803. */
  expect_bound("gs-mib-pod", "\"aliyun.com/gpu-mem\":\"3803\"", NULL, "gs-mib");
  expect_assigned("gs-mib-pod", "\"memory\":3987734528,");
  expect_aliyun("gs-mib-pod", "0", "3803", "16384", before);
}

/* ---- quantities as the API server hands them back ---- */

/* kube-apiserver stores quantities canonical: 3000 comes back as "3k", 8000
 * MiB of gpushare as "8k", 4096Mi as "4Gi"; users may also write 1Ki or 3e3.
 * Each must place, at the amount it stands for. */
static void test_canonical_quantities(void **s) {
  (void)s;
  static const char *const fits[][2] = {
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3k\"", "canon-v"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3e3\"", "canon-v"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"4Gi\"", "canon-v"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"5e1\"", "canon-v"},
      {"\"aliyun.com/gpu-mem\":\"8k\"", "canon-gs"},
      {"\"aliyun.com/gpu-mem\":\"1Ki\"", "canon-gs"},
  };
  for (size_t i = 0; i < sizeof(fits) / sizeof(fits[0]); i++) {
    char names[64];
    snprintf(names, sizeof(names), "\"%s\"", fits[i][1]);
    json_object *res = filter(fits[i][0], NULL, names);
    if (!ext_has_name(res, fits[i][1]))
      fail_msg("%s on %s: %s", fits[i][0], fits[i][1], json_object_to_json_string(res));
    json_object_put(res);
  }
  /* Bound, the pods read back from the API server hold what they asked. */
  expect_bound("canon-3k", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3k\"", NULL,
               "canon-v");
  expect_assigned("canon-3k", "\"memory\":3145728000,"); /* 3000 MiB */
  expect_bound("canon-3e3", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"3e3\"", NULL,
               "canon-v");
  expect_assigned("canon-3e3", "\"memory\":3145728000,");
  expect_bound("canon-8k", "\"aliyun.com/gpu-mem\":\"8k\"", NULL, "canon-gs");
  expect_assigned("canon-8k", "\"memory\":8388608000,"); /* 8000 MiB units */
  expect_bound("canon-1ki", "\"aliyun.com/gpu-mem\":\"1Ki\"", NULL, "canon-gs");
  expect_assigned("canon-1ki", "\"memory\":1073741824,"); /* 1024 MiB units */
}

/* ---- time-slicing ---- */

static void test_time_slicing(void **s) {
  (void)s;
  expect_bound("ts-1", "\"nvidia.com/gpu\":\"1\"", NULL, "ts-a");
  /* One replica of 4 holds a quarter of the GPU's memory; cores 0. */
  expect_assigned("ts-1",
                  "\"resource\":\"nvidia.com/gpu\",\"gpus\":[{\"uuid\":\"GPU-ts-a-0\","
                  "\"index\":0,\"memory\":4294967296,\"cores\":0}");
  expect_misfit("\"nvidia.com/gpu\":\"3\"", NULL, "ts-a",
                "asks for 3 GPUs, the node has 2 healthy nvidia.com/gpu GPUs");
  expect_misfit("\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"1000\"", NULL, "ts-a",
                "is time-slicing, which takes no");
  /* Issue 27: a pod that asked no gpumem was told "time-slicing, which takes
   * no nvidia.com/gpumem" whenever its resource was advertised in a form it
   * cannot use. The reason names what it asked and what the node offers. */
  ext_add_node("gs-nounit", 1, 16, "T4",
               "[{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,"
               "\"unit\":0}]",
               0);
  ext_add_node("ts-none", 1, 16, "T4",
               "[{\"name\":\"nvidia.com/gpu\",\"dialect\":\"timeSlicing\",\"count\":0,"
               "\"unit\":0}]",
               0);
  ext_add_node("gpu-as-cce", 1, 16, "T4",
               "[{\"name\":\"nvidia.com/gpu\",\"dialect\":\"cce\",\"count\":64,"
               "\"maxVgpus\":4}]",
               0);
  expect_misfit("\"aliyun.com/gpu-mem\":\"2\"", NULL, "gs-nounit",
                "container main asks for 2 units of aliyun.com/gpu-mem (gpushare); "
                "aliyun.com/gpu-mem here is advertised as gpushare with no memory unit");
  expect_misfit("\"nvidia.com/gpu\":\"1\"", NULL, "ts-none",
                "container main asks for 1 nvidia.com/gpu (a whole or time-sliced GPU, no gpumem "
                "or gpucores); nvidia.com/gpu here is advertised as time-slicing with no replicas");
  expect_misfit("\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"20\"", NULL, "gpu-as-cce",
                "asks for 1 nvidia.com/gpu (vgpu, with gpumem or gpucores); nvidia.com/gpu here "
                "is advertised as cce, a dialect this request cannot use");
  json_object *res = filter("\"aliyun.com/gpu-mem\":\"2\"", NULL, "\"gs-nounit\"");
  assert_non_null(ext_unresolvable_reason(res, "gs-nounit")); /* no preemption helps */
  json_object_put(res);
  /* Renamed resource, 2 replicas: the third pod finds no replica free. */
  expect_bound("tss-1", "\"nvidia.com/gpu.shared\":\"1\"", NULL, "ts-shared");
  expect_bound("tss-2", "\"nvidia.com/gpu.shared\":\"1\"", NULL, "ts-shared");
  expect_assigned("tss-2", "\"resource\":\"nvidia.com/gpu.shared\"");
  char *e = bind_new("tss-3", "\"nvidia.com/gpu.shared\":\"1\"", NULL, "ts-shared");
  ext_expect_contains(e, "a slot of nvidia.com/gpu.shared free; 0 have");
  free(e);
}

/* ---- CCE ---- */

static void test_cce(void **s) {
  (void)s;
  /* GPU 0 holds a memory-only slice: memory+compute goes to GPU 1. */
  const char *mc = "\"volcano.sh/gpu-mem.128Mi\":\"40\",\"volcano.sh/gpu-core.percentage\":\"50\"";
  expect_bound("cce-mc", mc, NULL, "cce-a");
  expect_assigned("cce-mc",
                  "\"resource\":\"volcano.sh/gpu-mem.128Mi\",\"gpus\":[{\"uuid\":"
                  "\"GPU-cce-a-1\",\"index\":1,\"memory\":5368709120,\"cores\":50}");
  /* 60 % more: GPU 1 has 50 % left, GPU 0 is of the other mode. */
  json_object *res =
      filter("\"volcano.sh/gpu-mem.128Mi\":\"8\",\"volcano.sh/gpu-core.percentage\":\"60\"", NULL,
             "\"cce-a\"");
  ext_expect_contains(ext_failed_reason(res, "cce-a"), "other isolation mode");
  json_object_put(res);
  /* Memory-only goes to GPU 0 (its mode), even though GPU 1 has room. */
  expect_bound("cce-m", "\"volcano.sh/gpu-mem.128Mi\":\"8\"", NULL, "cce-a");
  expect_assigned("cce-m", "\"uuid\":\"GPU-cce-a-0\"");
  /* Slice cap: cce-b allows 2 per GPU and holds 2. */
  res = filter("\"volcano.sh/gpu-mem.128Mi\":\"1\"", NULL, "\"cce-b\"");
  ext_expect_contains(ext_failed_reason(res, "cce-b"),
                      "a slot of volcano.sh/gpu-mem.128Mi free; 0 have; GPU-cce-b-0 already holds "
                      "2 CCE slices, the most one GPU takes (maxVgpus)");
  json_object_put(res);
  /* CCE's own cap (seed 004: at most 20 virtual GPUs per GPU), taken when
   * the inventory names none: the reason says 20, not just "0 have". */
  ext_add_node("cce-20", 1, 16, A100,
               "[{\"name\":\"volcano.sh/gpu-mem.128Mi\",\"dialect\":\"cce\",\"count\":128,"
               "\"unit\":134217728}]",
               0);
  for (int i = 0; i < 20; i++) {
    char name[32];
    snprintf(name, sizeof(name), "cce-20-%d", i);
    ext_add_holder(name, "cce-20", CCE_RES, "GPU-cce-20-0", 134217728LL, 0);
  }
  expect_misfit("\"volcano.sh/gpu-mem.128Mi\":\"1\"", NULL, "cce-20",
                "GPU-cce-20-0 already holds 20 CCE slices, the most one GPU takes (maxVgpus)");
  /* More than one GPU's memory. */
  expect_misfit("\"volcano.sh/gpu-mem.128Mi\":\"200\"", NULL, "cce-a",
                "asks for 25600 MiB per GPU");
}

/* ---- vgpu extras, several dialects on one GPU, exclusivity ---- */

static void test_vgpu_percentage_mix_exclusive(void **s) {
  (void)s;
  expect_bound("pct", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"50\"", NULL,
               "a100-node");
  expect_assigned("pct", "\"memory\":8589934592,\"cores\":0");
  /* Aliyun's annotations are for pods asking for aliyun.com/gpu-mem only. */
  assert_string_equal(annotation("pct", "ALIYUN_COM_GPU_MEM_IDX"), "");
  assert_string_equal(annotation("pct", "ALIYUN_COM_GPU_MEM_ASSIGNED"), "");
  /* mix: a 12 GiB vgpu slice leaves 4 GiB for gpushare. */
  json_object *res = filter("\"aliyun.com/gpu-mem\":\"5\"", NULL, "\"mix\"");
  assert_false(ext_has_name(res, "mix"));
  json_object_put(res);
  res = filter("\"aliyun.com/gpu-mem\":\"4\"", NULL, "\"mix\"");
  assert_true(ext_has_name(res, "mix"));
  json_object_put(res);
  /* 100 % cores wants the GPU alone; excl holds a 10 % slice. */
  res = filter(
      "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\","
      "\"nvidia.com/gpucores\":\"100\"",
      NULL, "\"excl\",\"nl-idle\"");
  assert_false(ext_has_name(res, "excl"));
  assert_true(ext_has_name(res, "nl-idle"));
  json_object_put(res);
}

/* ---- inventories and assignments out of range: a reason, never a crash ---- */

static void test_out_of_range(void **s) {
  (void)s;
  expect_misfit("\"aliyun.com/gpu-mem\":\"1\"", NULL, "bad-inv", "out of range");
  /* Two entries of 9e18 bytes each: the account saturates instead of wrapping. */
  expect_misfit("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1\"", NULL, "huge",
                "needs 1 GPUs each with 1 MiB");
}

/* ---- validation ---- */

static void test_validation(void **s) {
  (void)s;
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"4\",\"volcano.sh/gpu-core.percentage\":\"7\"",
                 NULL, "multiple of 5 and at most 100");
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"4\",\"volcano.sh/gpu-core.percentage\":\"105\"",
                 NULL, "multiple of 5 and at most 100");
  filter_refused("\"volcano.sh/gpu-core.percentage\":\"50\"", NULL, "compute only with memory");
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"1.5\"", NULL, "units of 128 MiB");
  /* Seed 004: CCE's memory is a positive integer of 128 MiB units; a 0 is
   * refused, with or without cores, where other dialects' 0 asks for none. */
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"0\"", NULL,
                 "container main: volcano.sh/gpu-mem.128Mi is 0; CCE requires a positive integer "
                 "number of 128 MiB units");
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"0\",\"volcano.sh/gpu-core.percentage\":\"50\"",
                 NULL, "volcano.sh/gpu-mem.128Mi is 0; CCE requires a positive integer");
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"-1\"", NULL,
                 "volcano.sh/gpu-mem.128Mi (units of 128 MiB): quantity '-1' is negative");
  json_object *res = filter("\"nvidia.com/gpu\":\"0\"", NULL, "\"gs-a\"");
  assert_true(ext_has_name(res, "gs-a")); /* a 0 of the other dialects asks for no GPU */
  json_object_put(res);
  /* Quantities: the parser's reason, naming the text. */
  filter_refused("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1.5k5\"", NULL,
                 "nvidia.com/gpumem (MiB): quantity '1.5k5' has an unknown suffix 'k5'");
  filter_refused("\"nvidia.com/vgpu\":\"500m\"", NULL, "quantity '500m' is not a whole number");
  filter_refused("\"aliyun.com/gpu-mem\":\"-2\"", NULL, "quantity '-2' is negative");
  filter_refused("\"aliyun.com/gpu-mem\":\"10E\"", NULL, "quantity '10E' is too large");
  filter_refused("\"aliyun.com/gpu-mem\":\"2M\"", NULL, "is 2000000, more than 1000000");
  filter_refused("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1Ki\"", NULL,
                 "quantity '1Ki' is not a whole number of MiB");
  filter_refused("\"volcano.sh/gpu-mem.128Mi\":\"256Mi\"", NULL, "units of 128 MiB");
  filter_refused("\"aliyun.com/gpu-mem\":\"2\",\"nvidia.com/vgpu\":\"1\"", NULL,
                 "one dialect per container");
  filter_refused("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpu\":\"1\"", NULL,
                 "one GPU resource per container");
  filter_refused("\"nvidia.com/gpu.shared\":\"1\",\"nvidia.com/gpucores\":\"10\"", NULL,
                 "time-slicing, which takes no");
  filter_refused(
      "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"100\","
      "\"nvidia.com/gpumem-percentage\":\"10\"",
      NULL, "not both");
  filter_refused("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"150\"", NULL,
                 "must be 1..100");
  filter_refused("\"aliyun.com/gpu-count\":\"1\"", NULL, "aliyun.com/gpu-count is not supported");
  filter_refused("\"nvidia.com/vgpu\":\"1\"", "\"vgpu.io/node-scheduler-policy\":\"tightest\"",
                 "unknown policy 'tightest'");
  filter_refused("\"nvidia.com/vgpu\":\"1\"", "\"hami.io/gpu-scheduler-policy\":\"mutex\"",
                 "is not binpack or spread");
  filter_refused("\"nvidia.com/vgpu\":\"1\"", "\"vgpu.io/use-gputype\":7", "comma list");
}

/* ---- no '%' in any reason ---- */

/* kube-scheduler passes a refusal's text to Eventf as the format string:
 * "0% cores" reached users as "0%!c(MISSING)ores". Misfits and refusals of
 * every kind that speak of percentages, and bind errors: not one '%' in the
 * answer (node names cannot hold one). */
static void expect_no_percent(const char *path, const char *body, const char *must) {
  char *out = NULL;
  long st = ext_call(path, body, strlen(body), &out);
  if (st != 200) fail_msg("%s -> %ld: %s", path, st, out);
  if (strchr(out, '%') != NULL) fail_msg("'%%' in the answer of %s: %s", path, out);
  ext_expect_contains(out, must);
  free(out);
}

static void test_no_percent_in_reasons(void **s) {
  (void)s;
  static const char *const limits[][2] = {
      /* misfits: the GPUs lack compute or memory now */
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"80\"", "80 percent cores"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"90\"",
       "90 percent of the memory"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"15000\"", "0 percent cores"},
      {"\"volcano.sh/gpu-mem.128Mi\":\"8\",\"volcano.sh/gpu-core.percentage\":\"95\"",
       "95 percent cores"},
      {"\"aliyun.com/gpu-mem\":\"15\"", "0 percent cores"},
      /* refusals: values no node takes, one quoting a '%' the user wrote */
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"150\"", "(percent of one GPU)"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"0\"", "must be 1..100"},
      {"\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"50%\"", "'50 percent'"},
      {"\"volcano.sh/gpu-mem.128Mi\":\"4\",\"volcano.sh/gpu-core.percentage\":\"7\"",
       "multiple of 5"},
  };
  for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
    char *pod = ext_pod_json("pct-probe", limits[i][0], NULL, NULL, NULL);
    char *body = ext_args_names(pod, "\"nl-busy\",\"cce-a\",\"gs-a\"");
    expect_no_percent("/filter", body, limits[i][1]);
    free(body);
    free(pod);
  }
  /* Bind: the fit rechecked on fresh state fails; its reason is the Error. */
  ext_add_pod("pct-bind", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpucores\":\"80\"", NULL, NULL,
              NULL);
  expect_no_percent("/bind",
                    "{\"PodName\":\"pct-bind\",\"PodNamespace\":\"default\",\"PodUID\":\"\","
                    "\"Node\":\"nl-busy\"}",
                    "80 percent cores");
}

/* ---- type / UUID selection ---- */

static void test_selection(void **s) {
  (void)s;
  const char *one = "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\"";
  json_object *res = filter(one, "\"vgpu.io/use-gputype\":\"a100\"", "\"t4-node\",\"a100-node\"");
  assert_true(ext_has_name(res, "a100-node"));
  ext_expect_contains(ext_failed_reason(res, "t4-node"),
                      "0 healthy nvidia.com/vgpu GPUs matching the pod's GPU type/UUID selection");
  json_object_put(res);
  res = filter(one, "\"nvidia.com/nouse-gputype\":\"T4, V100\"", "\"t4-node\",\"a100-node\"");
  assert_false(ext_has_name(res, "t4-node"));
  assert_true(ext_has_name(res, "a100-node"));
  json_object_put(res);
  /* Without a selection the tie goes to GPU 0; the UUID lists steer it. */
  expect_bound("sel-use", one, "\"nvidia.com/use-gpuuuid\":\"GPU-sel-1\"", "sel");
  expect_assigned("sel-use", "\"uuid\":\"GPU-sel-1\"");
  expect_bound("sel-nouse", one, "\"vgpu.io/nouse-gpuuuid\":\"GPU-sel-1,GPU-x\"", "sel");
  expect_assigned("sel-nouse", "\"uuid\":\"GPU-sel-0\"");
}

/* ---- policies ---- */

static void test_gpu_policy(void **s) {
  (void)s;
  const char *p =
      "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"4096\","
      "\"nvidia.com/gpucores\":\"10\"";
  /* GPU 0 holds 4 GiB / 25 %: binpack (default) joins it, spread takes GPU 1. */
  expect_bound("gp-binpack", p, NULL, "pack");
  expect_assigned("gp-binpack", "\"uuid\":\"GPU-pack-0\"");
  expect_bound("gp-spread", p, "\"vgpu.io/gpu-scheduler-policy\":\"spread\"", "pack");
  expect_assigned("gp-spread", "\"uuid\":\"GPU-pack-1\"");
}

static json_object *prioritize(const char *annotations) {
  char *pod = ext_pod_json("probe",
                           "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"2048\","
                           "\"nvidia.com/gpucores\":\"10\"",
                           annotations, NULL, NULL);
  char *body = ext_args_names(pod, "\"nl-busy\",\"nl-idle\"");
  json_object *res = ext_post("/prioritize", body, 200);
  free(body);
  free(pod);
  return res;
}

static void test_node_policy(void **s) {
  (void)s;
  /* Scores are the nodes' ranks (lowest 1) times 100. */
  json_object *res = prioritize("\"vgpu.io/node-scheduler-policy\":\"binpack\"");
  assert_int_equal(ext_score(res, "nl-busy"), 200);
  assert_int_equal(ext_score(res, "nl-idle"), 100);
  json_object_put(res);
  res = prioritize("\"hami.io/node-scheduler-policy\":\"spread\"");
  assert_int_equal(ext_score(res, "nl-busy"), 100);
  assert_int_equal(ext_score(res, "nl-idle"), 200);
  json_object_put(res);
}

/* A pod of two GPU containers is scored as a whole: its largest container on
 * the node after the other took its GPU. Scored as its first container only
 * (a quarter GPU), binpack would prefer mc-big, whose GPU 0 is half used;
 * with both, mc-small ends fuller (1250 of 2000 milli vs 1750 of 4000). */
static void test_score_all_containers(void **s) {
  (void)s;
  static const char pod[] =
      "{\"metadata\":{\"name\":\"mc\",\"namespace\":\"default\",\"uid\":\"uid-mc\","
      "\"annotations\":{\"vgpu.io/node-scheduler-policy\":\"binpack\"}},\"spec\":{\"containers\":["
      "{\"name\":\"small\",\"resources\":{\"limits\":{\"nvidia.com/vgpu\":\"1\","
      "\"nvidia.com/gpumem\":\"4096\",\"nvidia.com/gpucores\":\"25\"}}},"
      "{\"name\":\"big\",\"resources\":{\"limits\":{\"nvidia.com/vgpu\":\"2\","
      "\"nvidia.com/gpumem\":\"8192\",\"nvidia.com/gpucores\":\"50\"}}}]},"
      "\"status\":{\"phase\":\"Pending\"}}";
  char *body = ext_args_names(pod, "\"mc-small\",\"mc-big\"");
  json_object *res = ext_post("/prioritize", body, 200);
  assert_int_equal(ext_score(res, "mc-small"), 200);
  assert_int_equal(ext_score(res, "mc-big"), 100);
  json_object_put(res);
  free(body);
}

/* Filters a new pod asking for limits on node alone; the reason it was
 * refused there ("" when it fits). */
static char *filter_reason(const char *pod_name, const char *limits, const char *node) {
  char *pod = ext_pod_json(pod_name, limits, NULL, NULL, NULL);
  char names[128];
  snprintf(names, sizeof(names), "\"%s\"", node);
  char *body = ext_args_names(pod, names);
  json_object *res = ext_post("/filter", body, 200);
  const char *why = ext_failed_reason(res, node);
  char *out = strdup(ext_has_name(res, node) ? "" : why ? why : "(no reason)");
  json_object_put(res);
  free(body);
  free(pod);
  return out;
}

static void expect_filter(const char *pod_name, const char *limits, const char *node,
                          const char *reason_part) {
  char *why = filter_reason(pod_name, limits, node);
  if (reason_part[0] == '\0' && why[0] != '\0') fail_msg("%s on %s: %s", pod_name, node, why);
  if (reason_part[0] != '\0') ext_expect_contains(why, reason_part);
  free(why);
}

#define VGPU_MIB(n) "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"" #n "\""

/* contextReserve: GPU-ctx-0 (16 GiB) holds one 8 GiB vgpu slice, so with 512
 * MiB kept free per slice a second slice may take 7 GiB (8 + 7 + 2 x 0.5 =
 * 16), not 7.5; CCE counts the same; gpushare's units do not (Aliyun divides
 * the whole GPU). Alone on its GPU a slice may take all of it (ctx-alone). */
static void test_context_reserve(void **s) {
  (void)s;
  expect_filter("ctx-probe", VGPU_MIB(7680), "ctx",
                "1 more would without keeping contextReserve (512 MiB) free per slice");
  expect_filter("ctx-whole", VGPU_MIB(16384), "ctx-alone", "");
  /* 60 CCE units = 7680 MiB: refused the same way; 56 = 7168 MiB fits. */
  expect_filter("ctx-cce", "\"" CCE_RES "\":\"60\"", "ctx", "contextReserve (512 MiB)");
  expect_filter("ctx-cce56", "\"" CCE_RES "\":\"56\"", "ctx", "");
  expect_bound("ctx-vgpu7", VGPU_MIB(7168), NULL, "ctx");
  /* Full now for vgpu (8 + 7 + 3 x 0.5 > 16 for any third slice)... */
  expect_filter("ctx-more", VGPU_MIB(1), "ctx", "contextReserve");
  /* ...but gpushare's 1 GiB unit still fits the last GiB. */
  expect_bound("ctx-gs", "\"aliyun.com/gpu-mem\":\"1\"", NULL, "ctx");
}

/* ---- recorded kube-scheduler bodies ---- */

static char *read_request(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", VG_EXT_REQUESTS, name);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  char *text = calloc(1, 1 << 20);
  size_t n = fread(text, 1, (1 << 20) - 1, f);
  fclose(f);
  text[n] = 0;
  return text;
}

static void test_recorded_requests(void **s) {
  (void)s;
  char *body = read_request("filter-nodenames.json");
  json_object *res = ext_post("/filter", body, 200);
  assert_true(ext_has_name(res, "gs-a"));
  assert_true(json_object_get_type(json_object_object_get(res, "Nodes")) == json_type_null);
  ext_expect_contains(ext_failed_reason(res, "ts-a"), "which no GPU here advertises");
  json_object_put(res);
  free(body);

  body = read_request("filter-nodes.json");
  res = ext_post("/filter", body, 200);
  json_object *items = json_object_object_get(json_object_object_get(res, "Nodes"), "items");
  assert_int_equal(json_object_array_length(items), 1);
  json_object *meta = json_object_object_get(json_object_array_get_idx(items, 0), "metadata");
  assert_string_equal(json_object_get_string(json_object_object_get(meta, "name")), "rec-cce-1");
  ext_expect_contains(ext_failed_reason(res, "rec-cce-2"),
                      "asks for 5120 MiB per GPU, the largest GPU here has 4096 MiB");
  assert_true(json_object_get_type(json_object_object_get(res, "NodeNames")) == json_type_null);
  json_object_put(res);
  free(body);

  body = read_request("prioritize-nodenames.json");
  res = ext_post("/prioritize", body, 200);
  assert_int_equal(json_object_array_length(res), 2);
  assert_int_equal(ext_score(res, "nl-busy"), 200); /* the pod asks binpack */
  assert_int_equal(ext_score(res, "nl-idle"), 100);
  json_object_put(res);
  free(body);

  /* The bind body names pod default/rec-train, created from the same Pod. */
  body = read_request("filter-nodenames.json");
  json_object *args = json_tokener_parse(body);
  json_object *pod = json_object_object_get(args, "Pod");
  ext_admin("/_test/pods", json_object_to_json_string(pod));
  json_object_put(args);
  free(body);
  body = read_request("bind.json");
  res = ext_post("/bind", body, 200);
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  free(body);
  expect_assigned("rec-train", "\"resource\":\"aliyun.com/gpu-mem\"");
}

/* ---- restart recovery ---- */

static void test_restart_recovery(void **s) {
  (void)s;
  const char *big = "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"12288\"";
  expect_bound("rr-1", big, NULL, "rr");
  ext_sched_stop(true); /* SIGKILL: nothing saved, nothing flushed */
  assert_int_equal(ext_sched_start(NULL), 0);
  json_object *res = filter(big, NULL, "\"rr\"");
  assert_false(ext_has_name(res, "rr"));
  ext_expect_contains(ext_failed_reason(res, "rr"), "needs 1 GPUs each with 12288 MiB");
  json_object_put(res);
  char *e = bind_new("rr-2", big, NULL, "rr");
  ext_expect_contains(e, "needs 1 GPUs");
  free(e);
  expect_bound("rr-3", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"4096\"", NULL, "rr");
}

/* ---- the Pod/Node watch keeps long-lived views honest ---- */

static bool fits_on(const char *node) {
  char names[64];
  snprintf(names, sizeof(names), "\"%s\"", node);
  json_object *res =
      filter("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"12288\"", NULL, names);
  bool fits = ext_has_name(res, node);
  json_object_put(res);
  return fits;
}

/* Views kept for 10 minutes: a pod that takes watch-n's GPU behind the
 * scheduler's back (bound by someone else) is seen within seconds, because
 * its watch event drops the node's view. The control shows the view really
 * is kept without the watch, which is what the watch is for. */
static void test_watch_drops_changed_views(void **s) {
  (void)s;
  static const char *const watching[] = {"--cache-ttl-ms", "600000", NULL};
  static const char *const blind[] = {"--cache-ttl-ms", "600000", "--no-watch", NULL};
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(blind), 0);
  assert_true(fits_on("nowatch-n")); /* cached from here on */
  ext_add_holder("nowatch-holder", "nowatch-n", "nvidia.com/vgpu", "GPU-nowatch-n-0", 8 * EXT_GIB,
                 0);
  usleep(1500 * 1000);
  assert_true(fits_on("nowatch-n")); /* stale: nothing told it */
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(watching), 0);
  ext_wait_watching();
  assert_true(fits_on("watch-n"));
  ext_add_holder("watch-holder", "watch-n", "nvidia.com/vgpu", "GPU-watch-n-0", 8 * EXT_GIB, 0);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; i++) { /* up to 10 s on a loaded machine */
    seen = !fits_on("watch-n");
    if (!seen) usleep(100 * 1000);
  }
  assert_true(seen);
  assert_false(fits_on("nowatch-n")); /* and a fresh process read that node fresh */
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(NULL), 0);
}

/* Issue 27: at --cache-ttl-ms 0 with both watches synced, filters are
 * answered from the watch-fed store: no API read per filter, yet every
 * change the watch delivered is seen by the next filter (a pod bound and a
 * node's inventory changed behind the scheduler's back: ext_admin waits for
 * the watch event, docs/scheduler.md "Freshness"), and our own bind is seen
 * by the very next filter with no wait at all (read-your-writes). */
static void test_ttl0_watch_fed(void **s) {
  (void)s;
  ext_sched_stop(false);
  ext_add_node("wf-pod", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("wf-inv", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_node("wf-bind", 1, 16, A100, "[" VGPU16 "]", 0);
  assert_int_equal(ext_sched_start(NULL), 0); /* --cache-ttl-ms 0, watching */
  ext_wait_watching();
  long gets = ext_api_gets();
  assert_true(fits_on("wf-pod"));
  assert_true(fits_on("wf-inv"));
  assert_true(fits_on("wf-bind"));
  assert_true(fits_on("wf-pod")); /* TTL 0: asked again, still no read */
  assert_int_equal(ext_api_gets(), gets);

  /* A pod bound by someone else takes 8 of wf-pod's 16 GiB. */
  ext_add_holder("wf-holder", "wf-pod", "nvidia.com/vgpu", "GPU-wf-pod-0", 8 * EXT_GIB, 0);
  assert_false(fits_on("wf-pod"));
  /* wf-inv's device plugin reports its GPU Unhealthy. */
  ext_add_node("wf-inv", 1, 16, A100, "[" VGPU16 "]", 1);
  assert_false(fits_on("wf-inv"));
  assert_true(fits_on("wf-bind"));
  assert_int_equal(ext_api_gets(), gets);

  /* Our bind of 12 GiB on wf-bind, then at once a filter: the store may not
   * have the bind yet, so the node is read from the API until it does. */
  ext_add_pod("wf-mine", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"12288\"", NULL, NULL,
              NULL);
  json_object *res = ext_bind("wf-mine", "wf-bind");
  assert_string_equal(ext_bind_error(res), "");
  json_object_put(res);
  assert_false(fits_on("wf-bind"));
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(NULL), 0);
}

/* The store after 410 Gone: the history is compacted and a pod deleted at
 * once; the watches relist (and see the DELETED if it came after), and the
 * store serves filters again, without API reads, with the holder gone. */
static void test_store_after_expiry(void **s) {
  (void)s;
  ext_wait_watching(); /* so that ext_admin waits for the events of what follows */
  ext_add_node("wf-gone", 1, 16, A100, "[" VGPU16 "]", 0);
  ext_add_holder("wf-gone-holder", "wf-gone", "nvidia.com/vgpu", "GPU-wf-gone-0", 8 * EXT_GIB, 0);
  assert_false(fits_on("wf-gone"));
  ext_admin("/_test/compact", "{}");
  struct vg_k8s_response r;
  struct vg_err err;
  assert_int_equal(
      vg_k8s_request(ext_api, "DELETE", "/_test/pods/default/wf-gone-holder", NULL, NULL, &r, &err),
      0);
  assert_int_equal(r.status, 200);
  vg_k8s_response_free(&r);
  /* Served from the store (no API read) with the holder gone: after the
   * relist, or the DELETED event, whichever the watch got. A filter while
   * a watch is down reads the API, so it proves nothing here. */
  bool served = false;
  for (int i = 0; i < 100 && !served; i++) { /* up to 10 s on a loaded machine */
    ext_wait_watching();
    long gets = ext_api_gets();
    served = fits_on("wf-gone") && ext_api_gets() == gets;
    if (!served) usleep(100 * 1000);
  }
  assert_true(served);
}

/* ---- concurrent filters and binds ---- */

struct worker {
  int id;
  bool bound;
};

static void *bind_worker(void *arg) {
  struct worker *w = arg;
  char name[32];
  snprintf(name, sizeof(name), "cc-%d", w->id);
  json_object *res = ext_bind(name, "cc");
  w->bound = ext_bind_error(res)[0] == 0;
  json_object_put(res);
  return NULL;
}

/* Filters read cc's view while the binds change it. They ask more than cc's
 * GPU holds: a pod that fits only cc would be reserved there (filter
 * narrowing candidates to one reserves, extender_reserve.c) and take a
 * bind's place. */
static void *filter_worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 5; i++)
    json_object_put(
        filter("\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"20480\"", NULL, "\"cc\",\"rr\""));
  return NULL;
}

static void test_concurrent_no_double_booking(void **s) {
  (void)s;
  /* cc: one 16 GiB GPU with 8 slots; 8 pods of 4 GiB race; only 4 fit. */
  enum { N = 8 };
  struct worker w[N];
  pthread_t t[N + 2];
  for (int i = 0; i < N; i++) {
    char name[32];
    snprintf(name, sizeof(name), "cc-%d", i);
    ext_add_pod(name, "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"4096\"", NULL, NULL, NULL);
    w[i] = (struct worker){i, false};
  }
  for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, bind_worker, &w[i]);
  for (int i = N; i < N + 2; i++) pthread_create(&t[i], NULL, filter_worker, NULL);
  for (int i = 0; i < N + 2; i++) pthread_join(t[i], NULL);
  int bound = 0;
  for (int i = 0; i < N; i++) bound += w[i].bound;
  assert_int_equal(bound, 4);
}

/* ---- full NodeList with a long cache: a changed inventory is never served stale ---- */

static json_object *filter_nodes(const char *node) {
  char *pod = ext_pod_json("probe", "\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\"",
                           NULL, NULL, NULL);
  char *body = NULL;
  if (asprintf(&body, "{\"Pod\":%s,\"Nodes\":{\"metadata\":{},\"items\":[%s]},\"NodeNames\":null}",
               pod, node) < 0)
    abort();
  json_object *res = ext_post("/filter", body, 200);
  free(body);
  free(pod);
  return res;
}

static void test_nodelist_cache(void **s) {
  (void)s;
  static const char *const ttl[] = {"--cache-ttl-ms", "600000", NULL};
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(ttl), 0);
  char *healthy = ext_node_json("nl-cache", 1, 16, A100, "[" VGPU16 "]", 0);
  char *sick = ext_node_json("nl-cache", 1, 16, A100, "[" VGPU16 "]", 1);
  json_object *res = filter_nodes(healthy);
  assert_null(ext_failed_reason(res, "nl-cache"));
  json_object_put(res);
  res = filter_nodes(sick); /* same node, its GPU now Unhealthy: not the cached view */
  ext_expect_contains(ext_failed_reason(res, "nl-cache"), "0 healthy nvidia.com/vgpu GPUs");
  json_object_put(res);
  res = filter_nodes(healthy);
  assert_null(ext_failed_reason(res, "nl-cache"));
  json_object_put(res);
  free(healthy);
  free(sick);
  ext_sched_stop(false);
  assert_int_equal(ext_sched_start(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpushare),
      cmocka_unit_test(test_canonical_quantities),
      cmocka_unit_test(test_time_slicing),
      cmocka_unit_test(test_cce),
      cmocka_unit_test(test_vgpu_percentage_mix_exclusive),
      cmocka_unit_test(test_out_of_range),
      cmocka_unit_test(test_validation),
      cmocka_unit_test(test_no_percent_in_reasons),
      cmocka_unit_test(test_selection),
      cmocka_unit_test(test_gpu_policy),
      cmocka_unit_test(test_node_policy),
      cmocka_unit_test(test_score_all_containers),
      cmocka_unit_test(test_context_reserve),
      cmocka_unit_test(test_watch_drops_changed_views),
      cmocka_unit_test(test_ttl0_watch_fed),
      cmocka_unit_test(test_store_after_expiry),
      cmocka_unit_test(test_recorded_requests),
      cmocka_unit_test(test_restart_recovery),
      cmocka_unit_test(test_concurrent_no_double_booking),
      cmocka_unit_test(test_nodelist_cache),
  };
  return cmocka_run_group_tests(tests, setup, ext_teardown);
}

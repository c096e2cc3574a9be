/* test_plugin_config.c -- the device plugin's YAML configuration: every
 * example in examples/config/, NVIDIA's own time-slicing files, every kind of
 * bad input with its line, and the dialect helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "advertise.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static void load_example(const char *file, struct vg_plugin_config *cfg) {
  char path[512];
  struct vg_err err;
  snprintf(path, sizeof(path), "%s/%s", VG_EXAMPLES_DIR, file);
  if (vg_plugin_config_load(path, cfg, &err) != 0) fail_msg("%s: %s", file, err.msg);
}

static void parse_ok(const char *text, struct vg_plugin_config *cfg) {
  struct vg_err err;
  if (vg_plugin_config_parse_string(text, strlen(text), "t.yaml", cfg, &err) != 0)
    fail_msg("rejected: %s\n---\n%s", err.msg, text);
}

/* Asserts rejection at `line` with `reason` in the message. */
static void parse_bad(const char *text, int line, const char *reason) {
  struct vg_plugin_config cfg;
  struct vg_err err;
  err.msg[0] = '\0';
  if (vg_plugin_config_parse_string(text, strlen(text), "t.yaml", &cfg, &err) == 0)
    fail_msg("accepted:\n%s", text);
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "t.yaml:%d:", line);
  if (strncmp(err.msg, prefix, strlen(prefix)) != 0 || strstr(err.msg, reason) == NULL)
    fail_msg("'%s' is not '%s...%s'\n---\n%s", err.msg, prefix, reason, text);
  assert_int_equal(cfg.vgpu.enabled + cfg.gpushare.enabled + cfg.ts.enabled + cfg.cce.enabled, 0);
}

/* ---- examples ---------------------------------------------------------- */

static void test_example_vgpu(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("vgpu.yaml", &cfg);
  assert_true(cfg.vgpu.enabled);
  assert_false(cfg.gpushare.enabled || cfg.ts.enabled || cfg.cce.enabled);
  assert_string_equal(cfg.vgpu.resource_count, "nvidia.com/vgpu");
  assert_string_equal(cfg.vgpu.resource_mem, "nvidia.com/gpumem");
  assert_string_equal(cfg.vgpu.resource_mem_percentage, "nvidia.com/gpumem-percentage");
  assert_string_equal(cfg.vgpu.resource_cores, "nvidia.com/gpucores");
  assert_int_equal(cfg.vgpu.split_count, 10);
  assert_true(cfg.vgpu.memory_scaling == 1.0 && cfg.vgpu.core_scaling == 1.0);
  assert_string_equal(cfg.library, "/usr/local/vgpu/libvgpu.so");
  assert_string_equal(cfg.state_dir, "/var/lib/vgpu");
  assert_int_equal(cfg.context_reserve, 256 * MiB);
  vg_plugin_config_free(&cfg);
}

static void test_example_gpushare(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("gpushare.yaml", &cfg);
  assert_true(cfg.gpushare.enabled);
  assert_false(cfg.vgpu.enabled || cfg.ts.enabled || cfg.cce.enabled);
  assert_string_equal(cfg.gpushare.resource, "aliyun.com/gpu-mem");
  assert_int_equal(cfg.gpushare.unit, MiB);
  vg_plugin_config_free(&cfg);
}

static void test_example_timeslicing(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("timeslicing.yaml", &cfg);
  assert_true(cfg.ts.enabled);
  assert_false(cfg.vgpu.enabled || cfg.gpushare.enabled || cfg.cce.enabled);
  assert_false(cfg.ts.from_nvidia_file);
  assert_int_equal(cfg.ts.replicas, 4);
  assert_true(cfg.ts.fail_requests_greater_than_one);
  assert_false(cfg.ts.rename_by_default);
  assert_true(cfg.ts.all_devices);
  assert_int_equal(cfg.ts.memory_per_replica, VG_MEMORY_PER_REPLICA_EQUAL);
  assert_string_equal(cfg.ts.resource, "nvidia.com/gpu");
  vg_plugin_config_free(&cfg);
}

static void test_example_nvidia_file(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("nvidia-time-slicing.yaml", &cfg);
  assert_true(cfg.ts.enabled && cfg.ts.from_nvidia_file);
  assert_false(cfg.vgpu.enabled || cfg.gpushare.enabled || cfg.cce.enabled);
  assert_int_equal(cfg.ts.replicas, 4);
  assert_false(cfg.ts.fail_requests_greater_than_one || cfg.ts.rename_by_default);
  assert_int_equal(cfg.ts.memory_per_replica, VG_MEMORY_PER_REPLICA_NONE);
  assert_string_equal(cfg.library, VG_DEFAULT_LIBRARY); /* node options default */
  assert_int_equal(cfg.context_reserve, VG_DEFAULT_CONTEXT_RESERVE);
  vg_plugin_config_free(&cfg);
}

static void test_example_cce(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("cce.yaml", &cfg);
  assert_true(cfg.cce.enabled);
  assert_false(cfg.vgpu.enabled || cfg.gpushare.enabled || cfg.ts.enabled);
  assert_string_equal(cfg.cce.resource_mem, "volcano.sh/gpu-mem.128Mi");
  assert_string_equal(cfg.cce.resource_core, "volcano.sh/gpu-core.percentage");
  assert_int_equal(cfg.cce.max_vgpus_per_gpu, 20);
  vg_plugin_config_free(&cfg);
}

static void test_example_mixed(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("mixed.yaml", &cfg);
  assert_true(cfg.vgpu.enabled && cfg.gpushare.enabled && cfg.ts.enabled && cfg.cce.enabled);
  assert_int_equal(cfg.vgpu.split_count, 4);
  assert_int_equal(cfg.gpushare.unit, GiB);
  assert_string_equal(cfg.ts.resource, "nvidia.com/gpu.shared");
  assert_int_equal(cfg.ts.replicas, 2);
  assert_false(cfg.ts.all_devices);
  assert_int_equal(cfg.ts.n_devices, 2);
  assert_int_equal(cfg.context_reserve, 512 * MiB);
  vg_plugin_config_free(&cfg);
}

/* ---- NVIDIA's files, verbatim -------------------------------------------- */

/* The GPU Operator's time-slicing ConfigMap value (gpu-sharing.rst), with the
 * 4 replicas of seed 003's RTX 4070 Ti SUPER. */
static const char g_nvidia_operator[] =
    "version: v1\n"
    "flags:\n"
    "  migStrategy: none\n"
    "sharing:\n"
    "  timeSlicing:\n"
    "    renameByDefault: false\n"
    "    failRequestsGreaterThanOne: false\n"
    "    resources:\n"
    "      - name: nvidia.com/gpu\n"
    "        replicas: 4\n";

/* The k8s-device-plugin README's example. */
static const char g_nvidia_readme[] =
    "version: v1\n"
    "sharing:\n"
    "  timeSlicing:\n"
    "    renameByDefault: true\n"
    "    failRequestsGreaterThanOne: true\n"
    "    resources:\n"
    "    - name: nvidia.com/gpu\n"
    "      replicas: 10\n";

static void test_nvidia_files_verbatim(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  parse_ok(g_nvidia_operator, &cfg);
  assert_true(cfg.ts.enabled && cfg.ts.from_nvidia_file);
  assert_int_equal(cfg.ts.replicas, 4);
  assert_string_equal(cfg.ts.resource, "nvidia.com/gpu");
  assert_int_equal(cfg.ts.memory_per_replica, VG_MEMORY_PER_REPLICA_NONE);
  parse_ok(g_nvidia_readme, &cfg);
  assert_int_equal(cfg.ts.replicas, 10);
  assert_true(cfg.ts.rename_by_default && cfg.ts.fail_requests_greater_than_one);
  assert_string_equal(cfg.ts.resource, "nvidia.com/gpu.shared");
  /* The same document nested under dialects.timeSlicing (and as JSON, which is YAML). */
  parse_ok(
      "dialects:\n  timeSlicing:\n    version: v1\n    sharing:\n      timeSlicing:\n"
      "        resources:\n        - name: nvidia.com/gpu\n          replicas: 3\n",
      &cfg);
  assert_true(cfg.ts.enabled && !cfg.ts.from_nvidia_file);
  assert_int_equal(cfg.ts.replicas, 3);
  parse_ok(
      "{\"version\": \"v1\", \"sharing\": {\"timeSlicing\": {\"resources\": "
      "[{\"name\": \"nvidia.com/gpu\", \"replicas\": 2}]}}}",
      &cfg);
  assert_int_equal(cfg.ts.replicas, 2);
  /* Our extension in NVIDIA's file; replicas: 1 (NVIDIA refuses it: nv#1022). */
  parse_ok(
      "version: v1\nmemoryPerReplica: equal\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - {name: nvidia.com/gpu, replicas: 1, devices: all}\n",
      &cfg);
  assert_int_equal(cfg.ts.memory_per_replica, VG_MEMORY_PER_REPLICA_EQUAL);
  assert_int_equal(cfg.ts.replicas, 1);
  vg_plugin_config_free(&cfg);
}

/* A real-world v1 file with every section NVIDIA has: what vgpu implements
 * takes effect, the rest is named once, exactly, in cfg.warnings. */
static void test_nvidia_full_schema(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  load_example("nvidia-time-slicing-full.yaml", &cfg);
  assert_true(cfg.ts.enabled && cfg.ts.from_nvidia_file);
  assert_int_equal(cfg.ts.replicas, 4);
  assert_string_equal(cfg.ts.resource, "nvidia.com/gpu");
  assert_true(cfg.ts.fail_requests_greater_than_one && !cfg.ts.rename_by_default);
  assert_string_equal(cfg.warnings,
                      "config: these NVIDIA settings have no effect here: flags.failOnInitError, "
                      "flags.nvidiaDriverRoot, flags.gdrcopyEnabled, flags.plugin.passDeviceSpecs, "
                      "flags.plugin.deviceListStrategy, flags.plugin.deviceIDStrategy, "
                      "flags.plugin.containerDriverRoot, "
                      "flags.plugin.sharedDevicesAllocationPolicy, flags.gfd.oneshot, "
                      "flags.gfd.noTimestamp, flags.gfd.sleepInterval, flags.gfd.outputFile, "
                      "resources.gpus, resources.mig, sharing.mps (MPS is not provided; only "
                      "sharing.timeSlicing shares GPUs) (docs/configuration.md)");
  /* What vgpu implements warns about nothing. */
  parse_ok(g_nvidia_operator, &cfg);
  assert_string_equal(cfg.warnings, "");
  /* MPS alone shares nothing: each GPU is advertised once, as without sharing. */
  parse_ok(
      "version: v1\nsharing:\n  mps:\n    resources:\n"
      "    - {name: nvidia.com/gpu, replicas: 4}\n",
      &cfg);
  assert_true(cfg.ts.enabled);
  assert_int_equal(cfg.ts.replicas, 1);
  assert_string_equal(cfg.ts.resource, "nvidia.com/gpu");
  assert_non_null(strstr(cfg.warnings, "sharing.mps (MPS is not provided"));
  /* Flags-only files (NVIDIA's "exclusive" profile), MIG strategies, rename, imex. */
  parse_ok("version: v1\nflags:\n  migStrategy: mixed\n", &cfg);
  assert_int_equal(cfg.ts.replicas, 1);
  assert_non_null(strstr(cfg.warnings, ": flags.migStrategy ("));
  parse_ok(
      "version: v1\nimex:\n  channelIDs: [0]\n  required: true\nsharing:\n"
      "  timeSlicing:\n    resources:\n"
      "    - {name: nvidia.com/gpu, replicas: 2, rename: foo}\n",
      &cfg);
  assert_int_equal(cfg.ts.replicas, 2);
  assert_non_null(strstr(cfg.warnings,
                         ": imex.channelIDs, imex.required, "
                         "sharing.timeSlicing.resources[].rename ("));
  /* Nested under dialects.timeSlicing, the same. */
  parse_ok(
      "dialects:\n  timeSlicing:\n    version: v1\n    flags: {failOnInitError: false}\n"
      "    sharing:\n      timeSlicing:\n        resources:\n"
      "        - name: nvidia.com/gpu\n          replicas: 3\n",
      &cfg);
  assert_int_equal(cfg.ts.replicas, 3);
  assert_non_null(strstr(cfg.warnings, ": flags.failOnInitError ("));
  vg_plugin_config_free(&cfg);
}

static void test_defaults(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  parse_ok("dialects:\n  vgpu:\n  gpushare:\n  cce:\n", &cfg);
  assert_true(cfg.vgpu.enabled && cfg.gpushare.enabled && cfg.cce.enabled && !cfg.ts.enabled);
  assert_int_equal(cfg.vgpu.split_count, 10);
  assert_string_equal(cfg.vgpu.resource_count, "nvidia.com/vgpu");
  assert_int_equal(cfg.gpushare.unit, GiB);
  assert_int_equal(cfg.cce.max_vgpus_per_gpu, 20);
  assert_string_equal(cfg.library, VG_DEFAULT_LIBRARY);
  assert_string_equal(cfg.state_dir, VG_DEFAULT_STATE_DIR);
  assert_int_equal(cfg.context_reserve, 256 * MiB);
  parse_ok(
      "dialects:\n  vgpu:\n    resourceName: nvidia.com/gpu\n    deviceMemoryScaling: 0.9\n"
      "    deviceCoreScaling: 2\n",
      &cfg);
  assert_string_equal(cfg.vgpu.resource_count, "nvidia.com/gpu");
  assert_true(cfg.vgpu.memory_scaling == 0.9 && cfg.vgpu.core_scaling == 2.0);
  assert_int_equal(vg_dialect_vgpu_memory(&cfg, 10000 * MiB), 9000 * MiB);
  assert_int_equal(vg_dialect_vgpu_cores(&cfg), 200);
  vg_plugin_config_free(&cfg);
}

/* ---- bad input: line and reason ---------------------------------------- */

static void test_rejects_unknown_keys_and_dialects(void **s) {
  (void)s;
  parse_bad("dialects:\n  vgpu: {}\nlibary: /x\n", 3, "unknown key 'libary'");
  parse_bad("dialects:\n  vgpu:\n    splitCount: 4\n", 3, "unknown key 'splitCount' in vgpu");
  parse_bad("dialects:\n  gpushare:\n    unit: GiB\n", 3, "unknown key 'unit'");
  parse_bad("dialects:\n  vgpu:\n  mig: {}\n", 3, "unknown dialect 'mig'");
  parse_bad(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
      "      replicas: 2\n      replica: 3\n",
      7, "unknown key 'replica'");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    renameByDefaults: true\n", 4,
            "unknown key 'renameByDefaults'");
  parse_bad("version: v1\nflags:\n  deviceIDStrategy: uuid\nsharing: {}\n", 3,
            "unknown key 'deviceIDStrategy' in flags");
  parse_bad("dialects:\n  cce:\n    max: 3\n", 3, "unknown key 'max'");
  /* Keys NVIDIA does not know either are typos, in every NVIDIA section. */
  parse_bad("version: v1\nsharing:\n  timeslicing: {}\n", 3,
            "unknown key 'timeslicing' in sharing");
  parse_bad("version: v1\nflags:\n  failOnInitErorr: true\n", 3,
            "unknown key 'failOnInitErorr' in flags");
  parse_bad("version: v1\nflags:\n  plugin:\n    passDeviceSpec: true\n", 4,
            "unknown key 'passDeviceSpec' in flags.plugin");
  parse_bad("version: v1\nresources:\n  gpu: []\n", 3, "unknown key 'gpu' in resources");
  parse_bad("version: v1\nresources:\n  gpus:\n  - {pattern: '*', nam: x}\n", 4,
            "unknown key 'nam' in resources.gpus[]");
  parse_bad("version: v1\nsharing:\n  mps:\n    replicas: 2\n", 4,
            "unknown key 'replicas' in sharing.mps");
  parse_bad("dialects:\n  vgpu:\n  vgpu:\n", 3, "configured twice");
  parse_bad("dialects:\n  vgpu:\n    deviceSplitCount: 2\n    deviceSplitCount: 3\n", 4,
            "duplicate key 'deviceSplitCount'");
  parse_bad("dialect:\n  vgpu:\n", 1, "unknown key 'dialect'");
  parse_bad("library: /x\n", 1, "missing 'dialects:'");
  parse_bad("dialects: {}\n", 1, "no dialect enabled");
  parse_bad("dialects:\n  - vgpu\n", 2, "must be a mapping");
}

static void test_rejects_wrong_types(void **s) {
  (void)s;
  parse_bad("dialects:\n  vgpu:\n    deviceSplitCount: ten\n", 3, "must be an integer");
  parse_bad("dialects:\n  vgpu:\n    deviceSplitCount: \"4\"\n", 3, "must be an integer");
  parse_bad("dialects:\n  vgpu:\n    deviceSplitCount: 2.5\n", 3, "must be an integer");
  parse_bad("dialects:\n  vgpu:\n    deviceSplitCount: [1]\n", 3, "must be an integer, got a list");
  parse_bad("dialects:\n  vgpu:\n    deviceSplitCount: 0\n", 3, "must be 1..1024");
  parse_bad("dialects:\n  vgpu:\n    deviceMemoryScaling: lots\n", 3, "must be a number");
  parse_bad("dialects:\n  vgpu:\n    deviceMemoryScaling: 1.5\n", 3, "oversubscribe");
  parse_bad("dialects:\n  vgpu:\n    deviceMemoryScaling: 0\n", 3, "(0, 1]");
  parse_bad("dialects:\n  vgpu:\n    deviceCoreScaling: 11\n", 3, "(0, 10]");
  parse_bad("dialects:\n  vgpu:\n    resourceName: gpu\n", 3, "not a valid extended resource");
  parse_bad("dialects:\n  vgpu:\n    resourceName: Nvidia.com/gpu\n", 3, "not a valid");
  parse_bad("dialects:\n  vgpu:\n    resourceName: kubernetes.io/gpu\n", 3, "reserved");
  parse_bad("dialects:\n  vgpu:\n    resourceName: {a: b}\n", 3, "must be a string");
  parse_bad("dialects:\n  vgpu: 3\n", 2, "vgpu must be a mapping");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: \"yes\"\n", 4,
            "must be true or false");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: 1\n", 4,
            "must be true or false");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    resources: {name: nvidia.com/gpu}\n", 4,
            "must be a list");
  parse_bad("library: lib/libvgpu.so\ndialects:\n  vgpu:\n", 1, "absolute path");
  parse_bad("stateDir: [a]\ndialects:\n  vgpu:\n", 1, "must be a string");
  parse_bad("- a\n- b\n", 1, "must be a mapping");
}

static void test_rejects_bad_replicas(void **s) {
  (void)s;
  const char *head =
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n";
  char buf[512];
  snprintf(buf, sizeof(buf), "%s      replicas: 0\n", head);
  parse_bad(buf, 6, "replicas must be at least 1, got 0");
  snprintf(buf, sizeof(buf), "%s      replicas: -4\n", head);
  parse_bad(buf, 6, "replicas must be at least 1, got -4");
  snprintf(buf, sizeof(buf), "%s      replicas: 100000\n", head);
  parse_bad(buf, 6, "at most 1024");
  snprintf(buf, sizeof(buf), "%s      replicas: 99999999999999999999999\n", head);
  parse_bad(buf, 6, "out of range");
  snprintf(buf, sizeof(buf), "%s      replicas: four\n", head);
  parse_bad(buf, 6, "must be an integer");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
            5, "'replicas' is required");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n", 5,
            "'name' is required");
  parse_bad("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", 4, "empty list");
  parse_bad(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - {name: nvidia.com/gpu, replicas: 2}\n    - {name: nvidia.com/gpu, replicas: 3}\n",
      6, "duplicate time-slicing resource");
  parse_bad(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - {name: nvidia.com/mig-1g.5gb, replicas: 2}\n",
      5, "MIG resource");
  parse_bad(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 2\n      devices: [\"GPU-1234\"]\n",
      7, "not a GPU index");
  parse_bad(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 2\n      devices: [0, 0]\n",
      7, "twice");
  parse_bad(
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
      "    - name: nvidia.com/gpu\n      replicas: 2\n      devices: 2\n",
      7, "'all' or a list");
  parse_bad("version: v1\nflags:\n  migStrategy: mig\n", 3, "none, single or mixed");
  parse_bad("version: v1\nflags:\n  plugin: [passDeviceSpecs]\n", 3, "must be a mapping");
  parse_bad("version: v1\nsharing:\n  mps:\n    resources: 2\n", 4, "must be a list");
  parse_bad("version: v1\nmemoryPerReplica: half\nsharing: {}\n", 2, "none or equal");
  parse_bad("dialects:\n  timeSlicing:\n", 2, "needs NVIDIA's time-slicing document");
  parse_bad("dialects:\n  timeSlicing:\n    sharing: {}\n", 2, "missing 'version: v1'");
}

static void test_rejects_versions_units_sizes(void **s) {
  (void)s;
  parse_bad("version: v2\nsharing: {}\n", 1, "unsupported version 'v2'");
  parse_bad("version: v1beta1\ndialects:\n  vgpu:\n", 1, "unsupported version 'v1beta1'");
  parse_bad("sharing:\n  timeSlicing: {}\n", 1, "missing 'version: v1'");
  parse_bad("dialects:\n  gpushare:\n    memoryUnit: GB\n", 3,
            "memoryUnit must be GiB or MiB, got 'GB'");
  parse_bad("dialects:\n  gpushare:\n    memoryUnit: gib\n", 3, "GiB or MiB");
  parse_bad("contextReserve: 12x\ndialects:\n  vgpu:\n", 1, "contextReserve: ");
  parse_bad("dialects:\n  vgpu:\ncontextReserve: -1Mi\n", 3, "contextReserve");
  parse_bad("dialects:\n  cce:\n    maxVgpusPerGpu: 21\n", 3, "1..20");
}

static void test_rejects_duplicate_resources(void **s) {
  (void)s;
  /* HAMi's nvidia.com/gpu next to un-renamed time-slicing. */
  parse_bad(
      "dialects:\n  vgpu:\n    resourceName: nvidia.com/gpu\n  timeSlicing:\n"
      "    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n"
      "        - name: nvidia.com/gpu\n          replicas: 2\n",
      9, "resource 'nvidia.com/gpu' is used by both vgpu and timeSlicing (first at line 3)");
  parse_bad("dialects:\n  vgpu:\n    resourceMem: aliyun.com/gpu-mem\n  gpushare:\n", 4,
            "used by both vgpu and gpushare");
  parse_bad("dialects:\n  vgpu:\n    resourceCores: nvidia.com/gpumem\n", 3,
            "used by both vgpu and vgpu");
  parse_bad("dialects:\n  gpushare:\n    resourceName: volcano.sh/gpu-mem.128Mi\n  cce:\n", 4,
            "used by both gpushare and cce");
}

static void test_rejects_malformed_yaml(void **s) {
  (void)s;
  parse_bad("", 1, "empty configuration");
  parse_bad("# only a comment\n", 1, "empty configuration");
  parse_bad("dialects:\n  vgpu: {\n", 3, "YAML syntax error");
  parse_bad("dialects:\n\tvgpu:\n", 2, "YAML syntax error");
  parse_bad("dialects:\n  vgpu: *nope\n", 2, "YAML syntax error");
  parse_bad("dialects:\n  vgpu:\n---\ndialects:\n  cce:\n", 4, "second YAML document");
  parse_bad("dialects:\n  vgpu:\n---\n: [\n", 4, "YAML syntax error");
  /* An alias cycle must not hang or crash the walk. */
  parse_bad("dialects: &a\n  vgpu: *a\n", 2, "unknown key 'vgpu' in vgpu");
  parse_bad("version: v1\nsharing: &s\n  timeSlicing: *s\n", 3, "unknown key 'timeSlicing'");
  struct vg_plugin_config cfg;
  struct vg_err err;
  const char nul[] = "dialects:\n  vgpu:\n    resourceName: \"a.b/c\\0d\"\n";
  assert_int_equal(vg_plugin_config_parse_string(nul, sizeof(nul) - 1, "t.yaml", &cfg, &err), -1);
  assert_non_null(strstr(err.msg, "t.yaml:3:"));
  assert_int_equal(vg_plugin_config_load("/nonexistent/vgpu.yaml", &cfg, &err), -1);
  assert_non_null(strstr(err.msg, "/nonexistent/vgpu.yaml: cannot open"));
}

/* ---- helpers ----------------------------------------------------------- */

static const struct vg_advertised *find(const struct vg_advertised *a, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(a[i].name, name) == 0) return &a[i];
  fail_msg("%s not advertised", name);
  return NULL;
}

static void test_advertise(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  struct vg_advertised a[VG_ADVERTISED_MAX];
  load_example("mixed.yaml", &cfg);
  uint64_t mem = 16160 * MiB; /* seed 004's V100 */
  int n = vg_dialect_advertise(&cfg, mem, 0, a);
  assert_int_equal(n, 4);
  assert_int_equal(find(a, n, "nvidia.com/vgpu")->ids, 4);
  assert_int_equal(find(a, n, "aliyun.com/gpu-mem")->ids, 15); /* GiB, rounded down */
  assert_int_equal(find(a, n, "nvidia.com/gpu.shared")->ids, 2);
  assert_int_equal(find(a, n, "volcano.sh/gpu-mem.128Mi")->ids, 126);
  assert_int_equal(find(a, n, "volcano.sh/gpu-mem.128Mi")->dialect, VG_DIALECT_CCE);
  /* GPU 2 is not in the devices list: advertised whole, unshared. */
  n = vg_dialect_advertise(&cfg, mem, 2, a);
  assert_int_equal(find(a, n, "nvidia.com/gpu")->ids, 1);
  load_example("gpushare.yaml", &cfg);
  n = vg_dialect_advertise(&cfg, 7606 * MiB, 0, a); /* seed 002 */
  assert_int_equal(n, 1);
  assert_int_equal(a[0].ids, 7606);
  load_example("nvidia-time-slicing.yaml", &cfg);
  n = vg_dialect_advertise(&cfg, 16 * GiB, 0, a);
  assert_int_equal(n, 1);
  assert_string_equal(a[0].name, "nvidia.com/gpu");
  assert_int_equal(a[0].ids, 4);
  vg_plugin_config_free(&cfg);
}

static void test_container_limits(void **s) {
  (void)s;
  struct vg_plugin_config cfg;
  struct vg_container_limits l;
  struct vg_err err;
  load_example("gpushare.yaml", &cfg);
  assert_int_equal(
      vg_dialect_container_limits(&cfg, "aliyun.com/gpu-mem", 3803, 7606 * MiB, &l, &err), 0);
  assert_int_equal(l.memory, 3803 * MiB);
  assert_int_equal(l.dialect, VG_DIALECT_GPUSHARE);
  assert_false(l.pending || l.unlimited);
  assert_int_equal(
      vg_dialect_container_limits(&cfg, "aliyun.com/gpu-mem", 7607, 7606 * MiB, &l, &err), -1);
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/gpu", 1, 7606 * MiB, &l, &err),
                   -1);
  assert_non_null(strstr(err.msg, "not a resource of this configuration"));

  /* Time-slicing with equal memory: (16 GiB - 4 x 256 MiB) / 4 = 3840 MiB per replica. */
  load_example("timeslicing.yaml", &cfg);
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/gpu", 1, 16 * GiB, &l, &err), 0);
  assert_int_equal(l.memory_per_id, 3840 * MiB);
  assert_int_equal(l.memory, 3840 * MiB);
  assert_false(l.unlimited || l.pending);
  /* failRequestsGreaterThanOne: true in the example. */
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/gpu", 2, 16 * GiB, &l, &err), -1);
  assert_non_null(strstr(err.msg, "maximum request size for shared resources is 1"));
  /* A GPU too small for its replicas' contexts. */
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/gpu", 1, 1 * GiB, &l, &err), -1);

  /* NVIDIA's file: no isolation, as NVIDIA. */
  load_example("nvidia-time-slicing.yaml", &cfg);
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/gpu", 2, 16 * GiB, &l, &err), 0);
  assert_true(l.unlimited);
  assert_int_equal(l.memory, 0);

  load_example("vgpu.yaml", &cfg);
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/vgpu", 2, 16 * GiB, &l, &err), 0);
  assert_true(l.pending);
  assert_int_equal(l.gpus, 2);
  assert_int_equal(l.memory, 0);
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/gpumem", 2, 16 * GiB, &l, &err),
                   -1);
  assert_non_null(strstr(err.msg, "read from the pod"));
  assert_int_equal(vg_dialect_container_limits(&cfg, "nvidia.com/vgpu", 0, 16 * GiB, &l, &err), -1);

  load_example("cce.yaml", &cfg);
  assert_int_equal(
      vg_dialect_container_limits(&cfg, "volcano.sh/gpu-mem.128Mi", 40, 16160 * MiB, &l, &err), 0);
  assert_int_equal(l.memory, 5120 * MiB); /* seed 004: 40 x 128 MiB */
  assert_true(l.pending);
  assert_int_equal(vg_dialect_container_limits(&cfg, "volcano.sh/gpu-core.percentage", 25,
                                               16160 * MiB, &l, &err),
                   -1);
  vg_plugin_config_free(&cfg);
  assert_string_equal(vg_dialect_name(VG_DIALECT_TIMESLICING), "timeSlicing");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_example_vgpu),
      cmocka_unit_test(test_example_gpushare),
      cmocka_unit_test(test_example_timeslicing),
      cmocka_unit_test(test_example_nvidia_file),
      cmocka_unit_test(test_example_cce),
      cmocka_unit_test(test_example_mixed),
      cmocka_unit_test(test_nvidia_files_verbatim),
      cmocka_unit_test(test_nvidia_full_schema),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_rejects_unknown_keys_and_dialects),
      cmocka_unit_test(test_rejects_wrong_types),
      cmocka_unit_test(test_rejects_bad_replicas),
      cmocka_unit_test(test_rejects_versions_units_sizes),
      cmocka_unit_test(test_rejects_duplicate_resources),
      cmocka_unit_test(test_rejects_malformed_yaml),
      cmocka_unit_test(test_advertise),
      cmocka_unit_test(test_container_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

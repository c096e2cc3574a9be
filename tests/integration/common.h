/* common.h -- shared helpers of the integration tests: run the probe under
 * libvgpu on a fresh simulated GPU and read its JSON. */
#ifndef VG_TEST_COMMON_H
#define VG_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define MiB (1024ULL * 1024ULL)

/* A preloaded environment on a 4 GiB simulated GPU. */
static inline void env_preloaded(struct vg_env *env) {
  vg_env_init(env, true);
  vg_env_set(env, "VGPU_SIM_MEMORY", "4g");
}

static inline unsigned long long json_num(const char *out, const char *key) {
  unsigned long long v = 0;
  if (!vg_json_u64(out, key, &v)) {
    fail_msg("no \"%s\" in output: %s", key, out);
  }
  return v;
}

/* Runs build/tests/probe with up to 6 arguments. */
static inline int run_probe(const struct vg_env *env, struct vg_run *run, const char *a,
                            const char *b, const char *c, const char *d, const char *e) {
  char probe[512];
  snprintf(probe, sizeof(probe), "%s", vg_build_path("tests/probe"));
  char *argv[] = {probe, (char *)a, (char *)b, (char *)c, (char *)d, (char *)e, NULL};
  return vg_run(env, argv, run);
}

/* Kernels per second of `probe launch KIND SECONDS` in env (run keeps its
 * output for the caller's messages). */
static inline double probe_launch_rate(const struct vg_env *env, struct vg_run *run,
                                       const char *kind, const char *seconds) {
  run_probe(env, run, "launch", kind, seconds, NULL, NULL);
  unsigned long long per_s = 0;
  if (!vg_json_u64(run->out, "per_s", &per_s)) fail_msg("no rate: %s %s", run->out, run->err);
  return (double)per_s;
}

/* Starts build/tests/probe with up to 6 arguments (NULL-terminated) in the
 * background; its output is read with vg_spawn_output. */
static inline pid_t spawn_probe(const struct vg_env *env, const char *a, const char *b,
                                const char *c, const char *d, const char *e, const char *f) {
  char probe[512];
  snprintf(probe, sizeof(probe), "%s", vg_build_path("tests/probe"));
  char *argv[] = {probe, (char *)a, (char *)b, (char *)c, (char *)d, (char *)e, (char *)f, NULL};
  return vg_spawn(env, argv);
}

/* Reads device 0's mem_used (and mem_limit) from `vgpu status --json`. */
static inline unsigned long long region_used(const struct vg_env *env, unsigned long long *limit) {
  struct vg_run st;
  char vgpu[512];
  snprintf(vgpu, sizeof(vgpu), "%s", vg_build_path("bin/vgpu"));
  char *argv[] = {vgpu, "status", "--json", NULL};
  if (vg_run(env, argv, &st) != 0) return ~0ULL;
  char *procs = strstr(st.out, "\"processes\"");
  if (procs != NULL) *procs = '\0'; /* keep the devices part only */
  unsigned long long used = ~0ULL;
  vg_json_u64(st.out, "mem_used", &used);
  if (limit != NULL && !vg_json_u64(st.out, "mem_limit", limit)) *limit = ~0ULL;
  return used;
}

/* Waits (up to 10 s) until device 0 of the region has want bytes charged. */
static inline void wait_used(const struct vg_env *env, unsigned long long want) {
  for (int i = 0; i < 400 && region_used(env, NULL) != want; i++) usleep(25000);
  assert_int_equal(region_used(env, NULL), want);
}

#endif

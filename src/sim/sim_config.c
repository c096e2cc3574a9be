/*
 * sim_config.c -- the simulated GPU's configuration, read from the environment.
 *
 * The process that creates the state file decides what the "hardware" looks
 * like (see docs/simulator.md for the variables). Every value is checked: a
 * malformed one is an error that names the variable and the value, because a
 * test that silently ran on a different GPU than it asked for proves nothing.
 * Identities (UUID, PCI bus id) are derived from the device index only, so
 * tests can predict them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "size.h"
#include "sim_state.h"

#define DEFAULT_MEMORY (16ull << 30)
#define DEFAULT_SMS 108
#define DEFAULT_WAVE_US 100
#define DEFAULT_NAME "NVIDIA A100-SXM4-16GB (vgpu-sim)"

static int parse_uint(const char *var, const char *text, uint64_t min, uint64_t max, uint64_t *out,
                      struct vg_err *err) {
  uint64_t v = 0;
  const char *p = text;
  if (*p == '\0')
    return vg_err_set(err, "%s='%s' is not valid: expected a whole number from %llu to %llu", var,
                      text, (unsigned long long)min, (unsigned long long)max);
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (UINT64_MAX - 9) / 10) break;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (*p != '\0' || v < min || v > max)
    return vg_err_set(err, "%s='%s' is not valid: expected a whole number from %llu to %llu", var,
                      text, (unsigned long long)min, (unsigned long long)max);
  *out = v;
  return 0;
}

static int read_uint(const char *var, uint64_t min, uint64_t max, uint64_t *out,
                     struct vg_err *err) {
  const char *v = getenv(var);
  if (v == NULL) return 0;
  return parse_uint(var, v, min, max, out, err);
}

static int read_size(const char *var, uint64_t min, uint64_t *out, struct vg_err *err) {
  const char *v = getenv(var);
  if (v == NULL) return 0;
  struct vg_err why;
  uint64_t bytes;
  if (vg_parse_size(v, &bytes, &why) != 0)
    return vg_err_set(err, "%s='%s' is not valid: %s", var, v, why.msg);
  if (bytes < min)
    return vg_err_set(err, "%s='%s' is not valid: must be at least %llu bytes", var, v,
                      (unsigned long long)min);
  *out = bytes;
  return 0;
}

static int read_memory(struct vg_sim_config *cfg, struct vg_err *err) {
  uint64_t all = DEFAULT_MEMORY;
  if (read_size("VGPU_SIM_MEMORY", VG_SIM_GRANULE, &all, err) != 0) return -1;
  for (unsigned i = 0; i < VG_SIM_MAX_DEVICES; i++) {
    char var[32];
    snprintf(var, sizeof(var), "VGPU_SIM_MEMORY_%u", i);
    cfg->memory[i] = all;
    if (read_size(var, VG_SIM_GRANULE, &cfg->memory[i], err) != 0) return -1;
    if (cfg->memory[i] > (1ull << 44))
      return vg_err_set(err, "%s: %llu bytes is more than the simulator supports (16 TiB)",
                        getenv(var) != NULL ? var : "VGPU_SIM_MEMORY",
                        (unsigned long long)cfg->memory[i]);
  }
  return 0;
}

static int read_name(struct vg_sim_config *cfg, struct vg_err *err) {
  const char *v = getenv("VGPU_SIM_NAME");
  if (v == NULL) v = DEFAULT_NAME;
  size_t n = strlen(v);
  if (n == 0 || n >= sizeof(cfg->name))
    return vg_err_set(err, "VGPU_SIM_NAME='%s' is not valid: expected 1 to %zu characters", v,
                      sizeof(cfg->name) - 1);
  memcpy(cfg->name, v, n + 1);
  return 0;
}

/*
 * Timing profiles (VGPU_SIM_TIMING). "ideal" is the simulator as it always
 * was: launches and events cost nothing and every wave takes the whole wave
 * time. "h200" is an NVIDIA H200 as measured on 2026-11-26/27
 * (bench/results/2026-11-27-h200, docs/simulator.md "Timing profiles"):
 *  - 132 SMs and 81 us waves: vgpu-burn --shape big (132 x 32 blocks of
 *    256 threads, 4 waves) took 324 us a kernel (3084 kernels/s);
 *  - a thinly filled wave takes at least 10 % of that: --shape small (4
 *    blocks of 64 threads) took 8.0 us a kernel queued back to back
 *    (125063 kernels/s), compute-latency bound, not 81 us;
 *  - a launch call costs the host 3.2 us (vgpu-bench-launch, no preload:
 *    3232 ns per cuLaunchKernel);
 *  - an event record takes 1.5 us of the stream's GPU time: a sampled
 *    small kernel was charged 9.5 us (8.0 / 0.84, the factor its limits
 *    were met by) for 8.0 us of work, and the event pair is what a
 *    sample adds.
 * The synchronize wake-up was not measured: 0 in both.
 */
struct timing {
  uint64_t sms, wave_us, launch_ns, event_ns, sync_ns, min_wave_pct;
};
static const struct timing TIMING_IDEAL = {DEFAULT_SMS, DEFAULT_WAVE_US, 0, 0, 0, 0};
static const struct timing TIMING_H200 = {132, 81, 3200, 1500, 0, 10};

static int read_profile(struct timing *t, struct vg_err *err) {
  const char *v = getenv("VGPU_SIM_TIMING");
  if (v == NULL || strcmp(v, "ideal") == 0) {
    *t = TIMING_IDEAL;
    return 0;
  }
  if (strcmp(v, "h200") == 0) {
    *t = TIMING_H200;
    return 0;
  }
  return vg_err_set(err, "VGPU_SIM_TIMING='%s' is not valid: expected ideal or h200", v);
}

/* The profile, then each of its values as the environment overrides it. */
static int read_timing(struct timing *t, struct vg_err *err) {
  if (read_profile(t, err) != 0) return -1;
  if (read_uint("VGPU_SIM_SMS", 1, 1024, &t->sms, err) != 0) return -1;
  if (read_uint("VGPU_SIM_WAVE_US", 0, 60000000, &t->wave_us, err) != 0) return -1;
  if (read_uint("VGPU_SIM_LAUNCH_NS", 0, 1000000000, &t->launch_ns, err) != 0) return -1;
  if (read_uint("VGPU_SIM_EVENT_NS", 0, 1000000000, &t->event_ns, err) != 0) return -1;
  if (read_uint("VGPU_SIM_SYNC_NS", 0, 1000000000, &t->sync_ns, err) != 0) return -1;
  return read_uint("VGPU_SIM_MIN_WAVE_PCT", 0, 100, &t->min_wave_pct, err);
}

/* Strict decimal integer in [min, max]. */

int vg_sim_config_from_env(struct vg_sim_config *cfg, struct vg_err *err) {
  memset(cfg, 0, sizeof(*cfg));
  uint64_t devices = 1, ctx = 0;
  struct timing t;
  if (read_uint("VGPU_SIM_DEVICES", 1, VG_SIM_MAX_DEVICES, &devices, err) != 0) return -1;
  if (read_timing(&t, err) != 0) return -1;
  if (read_size("VGPU_SIM_CONTEXT_MEM", 0, &ctx, err) != 0) return -1;
  if (read_memory(cfg, err) != 0) return -1;
  if (read_name(cfg, err) != 0) return -1;
  cfg->devices = (uint32_t)devices;
  cfg->sms = (uint32_t)t.sms;
  cfg->wave_ns = t.wave_us * 1000;
  cfg->launch_ns = t.launch_ns;
  cfg->event_ns = t.event_ns;
  cfg->sync_ns = t.sync_ns;
  cfg->min_wave_pct = (uint32_t)t.min_wave_pct;
  cfg->context_mem = ctx;
  return 0;
}

/* Without VGPU_SIM_STATE, a container's processes still find the state the
 * runtime mounted at VG_SIM_CONTAINER_STATE: the runtime wrapper sets the
 * variable in the container's spec, but `kubectl exec` processes get the
 * environment Kubernetes knows, not the wrapper's — as with the real driver,
 * whose device nodes need no variable. */
void vg_sim_state_path(char *buf, size_t len) {
  const char *v = getenv("VGPU_SIM_STATE");
  if (v != NULL && *v != '\0')
    snprintf(buf, len, "%s", v);
  else if (access(VG_SIM_CONTAINER_STATE, R_OK | W_OK) == 0)
    snprintf(buf, len, "%s", VG_SIM_CONTAINER_STATE);
  else
    snprintf(buf, len, "/dev/shm/vgpu-sim-%u.state", (unsigned)getuid());
}

void vg_sim_device_uuid(unsigned i, char *buf, size_t len) {
  snprintf(buf, len, "GPU-5a1a0000-0000-4000-8000-%012x", i);
}

void vg_sim_device_uuid_bytes(unsigned i, unsigned char out[16]) {
  char text[VG_SIM_UUID_LEN];
  vg_sim_device_uuid(i, text, sizeof(text));
  const char *p = text + 4;
  for (int n = 0; n < 16; p++) {
    if (*p == '-') continue;
    unsigned byte = 0;
    sscanf(p, "%2x", &byte);
    out[n++] = (unsigned char)byte;
    p++;
  }
}

unsigned vg_sim_device_pci_bus(unsigned i) { return 0x10 + i; }

void vg_sim_device_bus_id(unsigned i, char *buf, size_t len) {
  snprintf(buf, len, "00000000:%02X:00.0", vg_sim_device_pci_bus(i));
}

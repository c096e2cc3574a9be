/*
 * cmd_status.c -- vgpu status: limits, usage and processes of a region.
 *
 * Opened read-write when possible so that processes that died are reaped
 * first (their memory returned) and the table shows the truth; read-only
 * otherwise (a monitoring user), in which case dead slots are marked.
 *
 * Compute has two figures per device. "SM UTIL" is what NVML measured the
 * container's live processes using over the last few seconds, limited or
 * not (utilisation.c), beside the whole GPU's utilisation; "n/a" when NVML
 * cannot tell, with the reason below the table. "CHARGED" is the GPU time
 * the limiter charged in the last second, an estimate that only exists
 * while a limit is set ("-" otherwise).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json_text.h"
#include "region.h"
#include "size.h"

static void size_or_unlimited(uint64_t v, char *buf, size_t len) {
  if (v == 0)
    snprintf(buf, len, "unlimited");
  else
    vg_format_size(v, buf, len);
}

static const char *policy_name(const struct vg_region_device *d) {
  return d->sm_policy == VG_SM_POLICY_SHARE ? "share" : "hard";
}

/* "12.5%" or "n/a" (the caller says why). */
static const char *pct_or_na(int ok, double pct, char *buf, size_t len) {
  if (ok)
    snprintf(buf, len, "%.1f%%", pct);
  else
    snprintf(buf, len, "n/a");
  return buf;
}

static void print_reasons(const struct vg_region *r, const struct vg_nvml *nv,
                          const struct vg_util *u) {
  if (!nv->ready) {
    printf("SM utilisation n/a: %s\n", nv->why);
    return;
  }
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++)
    if (!u[d].ok) printf("SM utilisation of device %u n/a: %s\n", d, u[d].why);
}

/* What the node agent granted, above the table: the limits shown are
 * already clamped to it. */
static void print_grant(const struct vg_grant *g, const char *dir) {
  if (g->count == 0) return;
  printf("grant %s/%s (set by the node agent; limits above it do not apply)\n", dir, VG_GRANT_FILE);
  for (unsigned i = 0; i < g->count; i++) {
    char mem[32], cores[16] = "unlimited";
    size_or_unlimited(g->gpu[i].memory, mem, sizeof(mem));
    if (g->gpu[i].cores) snprintf(cores, sizeof(cores), "%u%%", g->gpu[i].cores);
    printf("  %s  memory %s  cores %s\n", g->gpu[i].uuid, mem, cores);
  }
}

static void print_table(const struct vg_shm *shm, const struct vg_nvml *nv, const struct vg_util *u,
                        const struct vg_grant *g, const char *dir) {
  const struct vg_region *r = vg_region_of(shm);
  printf("region %s (layout %u.%u, generation %llu)\n", shm->path, r->header.version_major,
         r->header.version_minor, (unsigned long long)r->generation);
  if (vg_region_pending(r))
    printf("limits pending: the node agent has not written this container's limits yet\n");
  print_grant(g, dir);
  printf("%-4s %-42s %-10s %-10s %-16s %-8s %-8s %s\n", "DEV", "UUID", "MEM USED", "MEM LIMIT",
         "SM LIMIT", "SM UTIL", "GPU UTIL", "CHARGED");
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
    char used[32], limit[32], sm[32], util[16], gpu[16], charged[16];
    vg_format_size(vg_region_mem_used(r, (int)d), used, sizeof(used));
    size_or_unlimited(vg_cli_mem_limit(g, &r->dev[d]), limit, sizeof(limit));
    unsigned sm_limit = vg_cli_sm_limit(g, &r->dev[d]);
    if (sm_limit)
      snprintf(sm, sizeof(sm), "%u%% (%s)", sm_limit, policy_name(&r->dev[d]));
    else
      snprintf(sm, sizeof(sm), "unlimited");
    pct_or_na(u[d].ok, u[d].sm_pct, util, sizeof(util));
    pct_or_na(u[d].gpu_pct >= 0, u[d].gpu_pct, gpu, sizeof(gpu));
    if (sm_limit)
      pct_or_na(1, vg_region_sm_used_pct(&r->dev[d]), charged, sizeof(charged));
    else
      snprintf(charged, sizeof(charged), "-"); /* nothing is charged without a limit */
    printf("%-4u %-42s %-10s %-10s %-16s %-8s %-8s %s\n", d, r->dev[d].uuid, used, limit, sm, util,
           gpu, charged);
  }
  print_reasons(r, nv, u);
  printf("%-8s %-4s %-12s %-8s %s\n", "PID", "DEV", "MEM USED", "SM UTIL", "STATE");
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (r->proc[i].pid == 0) continue;
    const char *state = vg_shm_slot_alive(shm, (unsigned)i) ? "running" : "exited";
    for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
      char used[32], util[16];
      double pct = u[d].slot_pct[i];
      printf("%-8d %-4u %-12s %-8s %s\n", r->proc[i].pid, d,
             vg_format_size(r->proc[i].mem_used[d], used, sizeof(used)),
             pct_or_na(u[d].ok && pct >= 0, pct, util, sizeof(util)), state);
    }
  }
}

/* A JSON number, or null when not measured. */
static void json_pct(const char *key, int ok, double pct) {
  if (ok)
    printf(",\"%s\":%.1f", key, pct);
  else
    printf(",\"%s\":null", key);
}

/* Fields are only ever added here: scripts read this. */
static void print_json(const struct vg_shm *shm, const struct vg_util *u,
                       const struct vg_grant *g) {
  const struct vg_region *r = vg_region_of(shm);
  printf("{\"region\":\"%s\",\"generation\":%llu,\"limits_pending\":%s,\"devices\":[", shm->path,
         (unsigned long long)r->generation, vg_region_pending(r) ? "true" : "false");
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
    double charged = vg_region_sm_used_pct(&r->dev[d]);
    printf(
        "%s{\"index\":%u,\"uuid\":\"%s\",\"mem_used\":%llu,\"mem_limit\":%llu,"
        "\"sm_limit\":%u,\"sm_policy\":\"%s\",\"sm_used_pct\":%.1f",
        d ? "," : "", d, r->dev[d].uuid, (unsigned long long)vg_region_mem_used(r, (int)d),
        (unsigned long long)vg_cli_mem_limit(g, &r->dev[d]), vg_cli_sm_limit(g, &r->dev[d]),
        policy_name(&r->dev[d]), charged);
    const struct vg_grant_gpu *gpu = vg_grant_find(g, r->dev[d].uuid);
    if (gpu != NULL)
      printf(",\"grant_memory\":%llu,\"grant_cores\":%u", (unsigned long long)gpu->memory,
             gpu->cores);
    else
      printf(",\"grant_memory\":null,\"grant_cores\":null");
    json_pct("sm_charged_pct", vg_cli_sm_limit(g, &r->dev[d]) != 0, charged);
    json_pct("sm_util_pct", u[d].ok, u[d].sm_pct);
    json_pct("sm_util_others_pct", u[d].ok, u[d].others_pct);
    json_pct("gpu_util_pct", u[d].gpu_pct >= 0, u[d].gpu_pct);
    if (!u[d].ok) {
      printf(",\"sm_util_error\":");
      vg_json_fputs(stdout, u[d].why);
    }
    printf("}");
  }
  printf("],\"processes\":[");
  int first = 1;
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (r->proc[i].pid == 0) continue;
    unsigned long long total = 0;
    for (int d = 0; d < VG_MAX_DEVICES; d++) total += r->proc[i].mem_used[d];
    printf("%s{\"pid\":%d,\"mem_used\":%llu,\"alive\":%s,\"devices\":[", first ? "" : ",",
           r->proc[i].pid, total, vg_shm_slot_alive(shm, (unsigned)i) ? "true" : "false");
    for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
      printf("%s{\"index\":%u,\"mem_used\":%llu", d ? "," : "", d,
             (unsigned long long)r->proc[i].mem_used[d]);
      json_pct("sm_util_pct", u[d].ok && u[d].slot_pct[i] >= 0, u[d].slot_pct[i]);
      printf("}");
    }
    printf("]}");
    first = 0;
  }
  printf("]}\n");
}

/* Opens NVML: the simulator's with --sim, else the loader's
 * libnvidia-ml.so.1. Failure leaves nv->why for the table. */
static void open_nvml(struct vg_nvml *nv, int sim) {
  char lib[4200];
  if (!sim) {
    vg_nvml_open(nv, NULL);
    return;
  }
  if (vg_path_sim_nvml(lib, sizeof(lib)) != 0) {
    memset(nv, 0, sizeof(*nv));
    snprintf(nv->why, sizeof(nv->why), "--sim: no simulator found (set VGPU_SIM_DIR)");
    return;
  }
  vg_nvml_open(nv, lib);
}

int vg_cmd_status(int argc, char **argv) {
  const char *cache = NULL;
  int json = 0, sim = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cache") == 0 && i + 1 >= argc) {
      fputs("vgpu status: missing value for '--cache'\n", stderr);
      return 2;
    } else if (strcmp(argv[i], "--cache") == 0)
      cache = argv[++i];
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (strcmp(argv[i], "--sim") == 0)
      sim = 1;
    else {
      static const char *const known[] = {"--cache", "--json", "--sim", "--help", NULL};
      vg_cli_unknown_option("status", argv[i], known);
      return 2;
    }
  }
  char path[PATH_MAX];
  if (vg_cli_region("status", cache, path, sizeof(path)) != 0) return 1;
  struct vg_shm shm;
  struct vg_err err, err_ro;
  if (vg_shm_open_readonly(&shm, path, &vg_region_spec, &err_ro) != 0) {
    fprintf(stderr, "vgpu status: %s\n", err_ro.msg);
    return 1;
  }
  vg_shm_close(&shm);
  if (vg_region_open(&shm, path, &err) == 0) {
    shm.lock_wait_ms = 1000; /* the cleanup is a nicety: show the region rather than wait */
    if (vg_region_lock(&shm) == 0) {
      vg_region_reap_locked(&shm);
      vg_region_unlock(&shm);
    } else {
      fprintf(stderr, "vgpu status: %s: %s; showing it without cleanup\n", path,
              vg_shm_lock_strerror(shm.last_lock));
    }
  } else if (vg_shm_open_readonly(&shm, path, &vg_region_spec, &err) != 0) {
    fprintf(stderr, "vgpu status: %s\n", err.msg);
    return 1;
  }
  struct vg_nvml nv;
  struct vg_util *u = calloc(VG_MAX_DEVICES, sizeof(*u));
  if (u == NULL) {
    fprintf(stderr, "vgpu status: out of memory\n");
    vg_shm_close(&shm);
    return 1;
  }
  struct vg_grant grant;
  char dir[512];
  if (vg_cli_grant(&grant, dir, sizeof(dir), &err) < 0) {
    fprintf(stderr, "vgpu status: %s\n", err.msg);
    memset(&grant, 0, sizeof(grant));
  }
  open_nvml(&nv, sim);
  const struct vg_region *r = vg_region_of(&shm);
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++)
    vg_util_measure(&nv, &shm, (int)d, &u[d]);
  if (json)
    print_json(&shm, u, &grant);
  else
    print_table(&shm, &nv, u, &grant, dir);
  vg_nvml_close(&nv);
  free(u);
  vg_shm_close(&shm);
  return 0;
}

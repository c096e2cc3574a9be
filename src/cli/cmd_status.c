/*
 * cmd_status.c -- vgpu status: limits, usage and processes of a region.
 *
 * Opened read-write when possible so that processes that died are reaped
 * first (their memory returned) and the table shows the truth; read-only
 * otherwise (a monitoring user), in which case dead slots are marked.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
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

static void print_table(const struct vg_shm *shm) {
  const struct vg_region *r = vg_region_of(shm);
  printf("region %s (layout %u.%u, generation %llu)\n", shm->path, r->header.version_major,
         r->header.version_minor, (unsigned long long)r->generation);
  if (vg_region_pending(r))
    printf("limits pending: the node agent has not written this container's limits yet\n");
  printf("%-4s %-42s %-10s %-10s %-16s %s\n", "DEV", "UUID", "MEM USED", "MEM LIMIT", "SM LIMIT",
         "SM USED (last 1 s)");
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
    char used[32], limit[32], sm[32];
    vg_format_size(vg_region_mem_used(r, (int)d), used, sizeof(used));
    size_or_unlimited(vg_region_mem_limit(r, (int)d), limit, sizeof(limit));
    if (r->dev[d].sm_limit)
      snprintf(sm, sizeof(sm), "%u%% (%s)", r->dev[d].sm_limit, policy_name(&r->dev[d]));
    else
      snprintf(sm, sizeof(sm), "unlimited");
    printf("%-4u %-42s %-10s %-10s %-16s %.1f%%\n", d, r->dev[d].uuid, used, limit, sm,
           vg_region_sm_used_pct(&r->dev[d]));
  }
  printf("%-8s %-4s %-12s %s\n", "PID", "DEV", "MEM USED", "STATE");
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (r->proc[i].pid == 0) continue;
    const char *state = vg_shm_slot_alive(shm, (unsigned)i) ? "running" : "exited";
    for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
      char used[32];
      printf("%-8d %-4u %-12s %s\n", r->proc[i].pid, d,
             vg_format_size(r->proc[i].mem_used[d], used, sizeof(used)), state);
    }
  }
}

static void print_json(const struct vg_shm *shm) {
  const struct vg_region *r = vg_region_of(shm);
  printf("{\"region\":\"%s\",\"generation\":%llu,\"limits_pending\":%s,\"devices\":[", shm->path,
         (unsigned long long)r->generation, vg_region_pending(r) ? "true" : "false");
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++)
    printf(
        "%s{\"index\":%u,\"uuid\":\"%s\",\"mem_used\":%llu,\"mem_limit\":%llu,"
        "\"sm_limit\":%u,\"sm_policy\":\"%s\",\"sm_used_pct\":%.1f}",
        d ? "," : "", d, r->dev[d].uuid, (unsigned long long)vg_region_mem_used(r, (int)d),
        (unsigned long long)vg_region_mem_limit(r, (int)d), r->dev[d].sm_limit,
        policy_name(&r->dev[d]), vg_region_sm_used_pct(&r->dev[d]));
  printf("],\"processes\":[");
  int first = 1;
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (r->proc[i].pid == 0) continue;
    unsigned long long total = 0;
    for (int d = 0; d < VG_MAX_DEVICES; d++) total += r->proc[i].mem_used[d];
    printf("%s{\"pid\":%d,\"mem_used\":%llu,\"alive\":%s}", first ? "" : ",", r->proc[i].pid, total,
           vg_shm_slot_alive(shm, (unsigned)i) ? "true" : "false");
    first = 0;
  }
  printf("]}\n");
}

int vg_cmd_status(int argc, char **argv) {
  const char *cache = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cache") == 0 && i + 1 < argc)
      cache = argv[++i];
    else if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else {
      fprintf(stderr, "vgpu status: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
  const char *path = vg_path_region(cache);
  struct vg_shm shm;
  struct vg_err err, err_ro;
  if (vg_shm_open_readonly(&shm, path, &vg_region_spec, &err_ro) != 0) {
    fprintf(stderr, "vgpu status: %s\n", err_ro.msg);
    return 1;
  }
  vg_shm_close(&shm);
  if (vg_region_open(&shm, path, &err) == 0) {
    if (vg_region_lock(&shm) == 0) {
      vg_region_reap_locked(&shm);
      vg_region_unlock(&shm);
    } else {
      fprintf(stderr, "vgpu status: the lock of %s is unusable; showing it without cleanup\n",
              path);
    }
  } else if (vg_shm_open_readonly(&shm, path, &vg_region_spec, &err) != 0) {
    fprintf(stderr, "vgpu status: %s\n", err.msg);
    return 1;
  }
  if (json)
    print_json(&shm);
  else
    print_table(&shm);
  vg_shm_close(&shm);
  return 0;
}

/* advertise.c -- what each dialect advertises, and what device IDs alone say. */
#include "advertise.h"

#include <string.h>

/* The bytes one CCE memory device ID stands for: the dialect table's. */
static uint64_t cce_unit(void) { return vg_role_info(VG_ROLE_CCE_MEM)->memory_per_id; }

static int ts_covers(const struct vg_dialect_timeslicing *t, unsigned index) {
  if (t->all_devices) return 1;
  for (size_t i = 0; i < t->n_devices; i++)
    if (t->devices[i] == index) return 1;
  return 0;
}

int vg_dialect_advertise(const struct vg_plugin_config *cfg, uint64_t gpu_total_mem, unsigned index,
                         struct vg_advertised out[VG_ADVERTISED_MAX]) {
  int n = 0;
  if (cfg->vgpu.enabled)
    out[n++] =
        (struct vg_advertised){VG_DIALECT_VGPU, cfg->vgpu.resource_count, cfg->vgpu.split_count};
  if (cfg->gpushare.enabled && cfg->gpushare.unit > 0)
    out[n++] = (struct vg_advertised){VG_DIALECT_GPUSHARE, cfg->gpushare.resource,
                                      gpu_total_mem / cfg->gpushare.unit};
  if (cfg->ts.enabled) {
    if (ts_covers(&cfg->ts, index)) {
      out[n++] = (struct vg_advertised){VG_DIALECT_TIMESLICING, cfg->ts.resource, cfg->ts.replicas};
    } else {
      /* A GPU the devices list leaves out is advertised whole, unshared. */
      out[n++] =
          (struct vg_advertised){VG_DIALECT_TIMESLICING, vg_resource_name(NULL, VG_ROLE_GPU), 1};
    }
  }
  if (cfg->cce.enabled)
    out[n++] =
        (struct vg_advertised){VG_DIALECT_CCE, cfg->cce.resource_mem, gpu_total_mem / cce_unit()};
  return n;
}

uint64_t vg_dialect_vgpu_memory(const struct vg_plugin_config *cfg, uint64_t gpu_total_mem) {
  double scaling = cfg->vgpu.memory_scaling > 0 && cfg->vgpu.memory_scaling <= 1.0
                       ? cfg->vgpu.memory_scaling
                       : 1.0;
  uint64_t mib = gpu_total_mem >> 20;
  return (uint64_t)((double)mib * scaling) << 20;
}

unsigned vg_dialect_vgpu_cores(const struct vg_plugin_config *cfg) {
  double scaling = cfg->vgpu.core_scaling > 0 ? cfg->vgpu.core_scaling : 1.0;
  return (unsigned)(100.0 * scaling + 0.5);
}

int vg_dialect_container_limits(const struct vg_plugin_config *cfg, const char *name,
                                uint64_t n_ids, uint64_t gpu_total_mem,
                                struct vg_container_limits *limits, struct vg_err *err) {
  memset(limits, 0, sizeof(*limits));
  if (name == NULL) return vg_err_set(err, "no resource name");
  if (n_ids == 0) return vg_err_set(err, "%s: no device IDs", name);
  if (cfg->vgpu.enabled && strcmp(name, cfg->vgpu.resource_count) == 0) {
    limits->dialect = VG_DIALECT_VGPU;
    if (n_ids > 1024)
      return vg_err_set(err, "%s: %llu GPUs requested", name, (unsigned long long)n_ids);
    limits->gpus = (unsigned)n_ids;
    limits->pending = 1;
    return 0;
  }
  if (cfg->gpushare.enabled && strcmp(name, cfg->gpushare.resource) == 0) {
    limits->dialect = VG_DIALECT_GPUSHARE;
    limits->gpus = 1;
    limits->memory_per_id = cfg->gpushare.unit;
    if (n_ids > gpu_total_mem / cfg->gpushare.unit)
      return vg_err_set(err, "%s: %llu units requested, the GPU has %llu", name,
                        (unsigned long long)n_ids,
                        (unsigned long long)(gpu_total_mem / cfg->gpushare.unit));
    limits->memory = n_ids * cfg->gpushare.unit;
    return 0;
  }
  if (cfg->ts.enabled &&
      (strcmp(name, cfg->ts.resource) == 0 ||
       (!cfg->ts.all_devices && strcmp(name, vg_resource_name(NULL, VG_ROLE_GPU)) == 0))) {
    limits->dialect = VG_DIALECT_TIMESLICING;
    if (cfg->ts.fail_requests_greater_than_one && n_ids > 1 && strcmp(name, cfg->ts.resource) == 0)
      return vg_err_set(err,
                        "%s: %llu replicas requested; maximum request size for shared resources "
                        "is 1 (failRequestsGreaterThanOne)",
                        name, (unsigned long long)n_ids);
    if (strcmp(name, cfg->ts.resource) != 0 ||
        cfg->ts.memory_per_replica == VG_MEMORY_PER_REPLICA_NONE) {
      limits->unlimited = 1; /* as NVIDIA: a replica is an access token, no isolation */
      return 0;
    }
    uint64_t replicas = cfg->ts.replicas, reserve = cfg->context_reserve * replicas;
    if (reserve / replicas != cfg->context_reserve || reserve >= gpu_total_mem)
      return vg_err_set(err,
                        "%s: %llu replicas with a context reserve of %llu bytes each leave no "
                        "memory on a GPU of %llu bytes",
                        name, (unsigned long long)replicas,
                        (unsigned long long)cfg->context_reserve,
                        (unsigned long long)gpu_total_mem);
    uint64_t per = (gpu_total_mem - reserve) / replicas;
    per &= ~((1ULL << 20) - 1);
    if (per == 0) return vg_err_set(err, "%s: less than 1 MiB per replica", name);
    if (n_ids > replicas)
      return vg_err_set(err, "%s: %llu replicas requested, a GPU has %llu", name,
                        (unsigned long long)n_ids, (unsigned long long)replicas);
    limits->memory_per_id = per;
    limits->memory = per * n_ids;
    return 0;
  }
  if (cfg->cce.enabled && strcmp(name, cfg->cce.resource_mem) == 0) {
    limits->dialect = VG_DIALECT_CCE;
    uint64_t unit = cce_unit();
    if (n_ids > gpu_total_mem / unit)
      return vg_err_set(err, "%s: %llu x 128 MiB requested, the GPU has %llu", name,
                        (unsigned long long)n_ids, (unsigned long long)(gpu_total_mem / unit));
    limits->gpus = 1;
    limits->memory_per_id = unit;
    limits->memory = n_ids * unit;
    limits->pending = 1; /* gpu-core.percentage comes from the pod */
    return 0;
  }
  if ((cfg->vgpu.enabled && (strcmp(name, cfg->vgpu.resource_mem) == 0 ||
                             strcmp(name, cfg->vgpu.resource_mem_percentage) == 0 ||
                             strcmp(name, cfg->vgpu.resource_cores) == 0)) ||
      (cfg->cce.enabled && strcmp(name, cfg->cce.resource_core) == 0))
    return vg_err_set(err, "%s is read from the pod, not a device-plugin resource", name);
  return vg_err_set(err, "%s: not a resource of this configuration", name);
}

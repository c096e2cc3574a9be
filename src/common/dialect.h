/*
 * dialect.h -- the one table of the resource dialects a pod may write its GPU
 * request in (vgpu/HAMi, gpushare/Aliyun, timeSlicing/NVIDIA, cce/Huawei).
 *
 * A dialect is a set of extended resource names, each with a role: how many
 * GPUs, how much memory per GPU (and in which unit), how much compute. The
 * device plugin advertises some of them to the kubelet (device IDs), the
 * others are read from the pod's spec; the scheduler extender, the admission
 * webhook and kubectl-inspect-gpushare read them all. This table is the only
 * place under src/ that spells a dialect's default resource names: every
 * other file asks it by role.
 *
 * An operator may rename some resources in the device plugin's configuration
 * (docs/configuration.md: vgpu's four names and gpushare's). The other
 * programs learn the same renames with `--resource KEY=NAME`, KEY being the
 * configuration's own key (`vgpu.resourceMem=example.com/vram`); struct
 * vg_resource_names holds a program's names, defaults plus renames.
 */
#ifndef VG_COMMON_DIALECT_H
#define VG_COMMON_DIALECT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A Kubernetes extended resource name is at most 253 + 1 + 63 characters. */
#define VG_RESOURCE_NAME_MAX 320

/* The dialects, one numbering for every program (the device plugin indexes
 * arrays with it; the inventory annotation spells it with vg_dialect_name). */
enum vg_dialect {
  VG_DIALECT_NONE = -1, /* a name no dialect knows */
  VG_DIALECT_VGPU = 0,
  VG_DIALECT_GPUSHARE = 1,
  VG_DIALECT_TIMESLICING = 2,
  VG_DIALECT_CCE = 3,
  VG_DIALECT_COUNT = 4
};

/* What a resource name stands for in a container's request. */
enum vg_role {
  VG_ROLE_VGPU_COUNT,   /* vgpu: distinct GPUs (device IDs, one per GPU) */
  VG_ROLE_VGPU_MEM,     /* vgpu: memory per GPU, MiB (read from the pod) */
  VG_ROLE_VGPU_MEM_PCT, /* vgpu: memory per GPU, percent of the GPU (from the pod) */
  VG_ROLE_VGPU_CORES,   /* vgpu: compute per GPU, percent (from the pod) */
  VG_ROLE_GPUSHARE_MEM, /* gpushare: memory units on one GPU (device IDs) */
  VG_ROLE_GPU,          /* whole GPUs, or timeSlicing replicas when not renamed */
  VG_ROLE_GPU_SHARED,   /* timeSlicing replicas, renamed (renameByDefault) */
  VG_ROLE_CCE_MEM,      /* cce: units of 128 MiB on one GPU (device IDs) */
  VG_ROLE_CCE_CORES,    /* cce: compute percent, a multiple of 5 (from the pod) */
  VG_ROLE_COUNT
};

/* How a role's quantity is read. */
enum vg_unit {
  VG_UNIT_COUNT,   /* a plain number: GPUs, replicas */
  VG_UNIT_MIB,     /* MiB (pod_quantity.h: or bytes with a binary suffix) */
  VG_UNIT_PERCENT, /* percent of one GPU */
  VG_UNIT_NODE,    /* the node's memory unit: gpushare.memoryUnit, in the inventory */
  VG_UNIT_128MIB   /* units of VG_CCE_UNIT */
};

/* Memory one cce device ID stands for (seed 004). */
#define VG_CCE_UNIT (128ULL << 20)
/* gpushare's memory unit unless memoryUnit says MiB (seed 002). */
#define VG_GPUSHARE_UNIT_DEFAULT (1ULL << 30)

struct vg_role_info {
  enum vg_dialect
      dialect; /* whose; VG_ROLE_GPU is timeSlicing's (and vgpu's count when so named) */
  const char *default_name; /* the name when nobody renamed it */
  const char *key;          /* the device plugin's configuration key that renames it
                               ("vgpu.resourceMem"), NULL when it cannot be renamed */
  enum vg_unit unit;
  int device;             /* 1: a device-plugin resource (the kubelet counts device IDs);
                             0: read from the pod's spec by the scheduler and the binder */
  uint64_t memory_per_id; /* bytes one device ID stands for when fixed (cce); 0 when it
                             carries none (vgpu, replicas) or the node decides (gpushare's
                             unit, timeSlicing's memoryPerReplica: the inventory's unit) */
  const char *unit_text;  /* said after the name in messages (" (MiB)"), or "" */
};

/* The row of role r (r < VG_ROLE_COUNT). */
const struct vg_role_info *vg_role_info(enum vg_role r);

/* The dialect's spelling in the configuration and the inventory ("vgpu",
 * "gpushare", "timeSlicing", "cce"); "unknown" for any other value. */
const char *vg_dialect_name(enum vg_dialect d);

/* How messages name it ("vgpu", "gpushare", "time-slicing", "cce"). */
const char *vg_dialect_label(enum vg_dialect d);

/* vg_dialect_name's inverse; VG_DIALECT_NONE for NULL or an unknown spelling. */
enum vg_dialect vg_dialect_from_name(const char *s);

/* One program's resource names: the defaults with the operator's renames. */
struct vg_resource_names {
  char name[VG_ROLE_COUNT][VG_RESOURCE_NAME_MAX];
};

/* Every role under its default name. */
void vg_resource_names_default(struct vg_resource_names *n);

/* The name of role r in n; n == NULL: the default name. */
const char *vg_resource_name(const struct vg_resource_names *n, enum vg_role r);

/* Applies one `KEY=NAME` (the argument of --resource). -1 with err, n
 * unchanged, for an unknown or fixed key, a name that is not domain/name or
 * too long, or a name another role already has. */
int vg_resource_names_set(struct vg_resource_names *n, const char *arg, struct vg_err *err);

/* The role whose name is `name` in n (n == NULL: the defaults), or -1. */
int vg_resource_role(const struct vg_resource_names *n, const char *name);

/* Every name of n joined with `sep`, in role order, into buf; -1 when buf is
 * too short. */
int vg_resource_names_join(const struct vg_resource_names *n, const char *sep, char *buf,
                           size_t len);

/* The keys --resource accepts, for usage texts ("vgpu.resourceName, ..."). */
const char *vg_resource_keys(void);

#endif

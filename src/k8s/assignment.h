/*
 * assignment.h -- the `vgpu.io/assigned` Pod annotation: which physical GPUs,
 * and how much of each, the scheduler gave every GPU container of a pod.
 *
 * It is the contract between the two halves of vgpu: the scheduler extender
 * writes it in the Binding (docs/scheduler.md), the device plugin reads it to
 * steer the kubelet's choice of device IDs and to bind each container's
 * limits (docs/allocation.md), and the scheduler reads it back from every pod
 * on a node to know what is taken. Both sides use this one parser, and it is
 * strict about what it understands: a wrong type, a missing field, a value
 * out of range or a version other than 1 is an error naming the field, so
 * that no side acts on half of an assignment. Keys it does not know are
 * ignored (additions that old readers may safely skip); anything an old
 * reader must not skip comes with a new version.
 */
#ifndef VG_K8S_ASSIGNMENT_H
#define VG_K8S_ASSIGNMENT_H

#include <stdint.h>

#include <json-c/json.h>

#include "err.h"

#define VG_ASSIGNED_ANNOTATION "vgpu.io/assigned"
/* Aliyun gpushare's pod annotations, written for pods asking for
 * gpushare memory (VG_ROLE_GPUSHARE_MEM, common/dialect.h) so that its users' tools keep working:
 * vgpu-scheduler writes all five in the Binding, the node agent sets ASSIGNED "true" (and
 * ASSUME_TIME anew) when it allocates. Informational only: vgpu never reads
 * them back to decide anything (docs/security.md). */
#define VG_ALIYUN_IDX "ALIYUN_COM_GPU_MEM_IDX"
#define VG_ALIYUN_POD "ALIYUN_COM_GPU_MEM_POD"
#define VG_ALIYUN_DEV "ALIYUN_COM_GPU_MEM_DEV"
#define VG_ALIYUN_ASSIGNED "ALIYUN_COM_GPU_MEM_ASSIGNED"
#define VG_ALIYUN_ASSUME_TIME "ALIYUN_COM_GPU_MEM_ASSUME_TIME"
#define VG_ASSIGN_VERSION 1
#define VG_ASSIGN_MAX_GPUS 16      /* per container */
#define VG_ASSIGN_MAX_CTRS 64      /* per pod */
#define VG_ASSIGN_UUID_MAX 96      /* bytes, with the NUL */
#define VG_ASSIGN_NAME_MAX 64      /* container names are DNS labels (63) */
#define VG_ASSIGN_RESOURCE_MAX 254 /* qualified resource names (253) */

struct vg_assign_gpu {
  char uuid[VG_ASSIGN_UUID_MAX];
  int index;      /* NVML index when assigned; informative */
  int64_t memory; /* bytes this container may use on the GPU; > 0 */
  int cores;      /* percent of the GPU's compute, 0..100; 0 = no limit */
};

struct vg_assign_ctr {
  char name[VG_ASSIGN_NAME_MAX];
  char resource[VG_ASSIGN_RESOURCE_MAX]; /* the resource it asked for */
  int ngpus;
  struct vg_assign_gpu gpu[VG_ASSIGN_MAX_GPUS];
};

struct vg_assignment {
  char node[VG_ASSIGN_RESOURCE_MAX];
  int nctrs;
  struct vg_assign_ctr *ctr; /* nctrs entries, heap */
};

/* Parses the annotation's text into *a (zeroed first; vg_assign_free it on
 * success). Returns 0, or -1 with err naming the field and what is wrong. */
int vg_assign_parse(const char *text, struct vg_assignment *a, struct vg_err *err);

/* The pod's annotation: 1 with *a filled, 0 when the pod has none, -1 with
 * err when it is malformed. */
int vg_assign_from_pod(json_object *pod, struct vg_assignment *a, struct vg_err *err);

/* The JSON object for a (caller puts). Checked like the parser: returns NULL
 * with err for an assignment the parser would refuse. */
json_object *vg_assign_to_json(const struct vg_assignment *a, struct vg_err *err);

/* Appends an empty container (name, resource) to a; NULL when full or out of
 * memory. */
struct vg_assign_ctr *vg_assign_add_ctr(struct vg_assignment *a, const char *name,
                                        const char *resource);

/* The entry of container `name` asking for `resource`, or NULL. */
const struct vg_assign_ctr *vg_assign_find(const struct vg_assignment *a, const char *name,
                                           const char *resource);

void vg_assign_free(struct vg_assignment *a);

#endif

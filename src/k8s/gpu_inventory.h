/*
 * gpu_inventory.h -- the `vgpu.io/gpu-inventory` Node annotation: what a
 * node's GPUs are, whether they are usable, and what each advertises
 * (docs/inventory.md has the schema and what every field means).
 *
 * It is the contract between the node agent, which writes it
 * (agent/inventory.c), and its readers, vgpu-scheduler
 * (extender/extender_view.c) and kubectl inspect gpushare
 * (inspect/nodes.c). All of them go through this one codec, as the
 * assignment's sides go through assignment.h, so that the version, the
 * field names and what a field may hold are written down once.
 *
 * The reader refuses what no writer of this version produces: a version
 * other than VG_INVENTORY_VERSION, a field of the wrong type, a required
 * field missing, a number out of range, a string too long for its buffer;
 * the error names the field (`gpus[1].resources[0].unit`) and what is
 * wrong. Keys it does not know are ignored: fields may be added within a
 * version. Such an addition (say, the node's configured resource names) is
 * a member below, one line in vg_inv_parse's step for its object and one in
 * the encoder, optional on reading (older agents do not write it), its
 * absence marked by a value no writer uses (-1, ""). Anything an old reader
 * must not skip comes with a new version.
 *
 * This file is not named inventory.h: the node agent's publisher already
 * is, and its files include "inventory.h" for that one.
 */
#ifndef VG_K8S_GPU_INVENTORY_H
#define VG_K8S_GPU_INVENTORY_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "err.h"

#define VG_INVENTORY_ANNOTATION "vgpu.io/gpu-inventory"
#define VG_INVENTORY_VERSION 1

#define VG_INV_MAX_GPUS 256          /* per node */
#define VG_INV_MAX_RES 16            /* resources one GPU advertises */
#define VG_INV_MAX_BYTES (1LL << 50) /* 1 PiB: no GPU comes near; larger is corruption */
#define VG_INV_NODE_MAX 254          /* node names are DNS subdomains (253), with the NUL */
#define VG_INV_UUID_MAX 96           /* NVML's UUID buffer, with the NUL */
#define VG_INV_TYPE_MAX 96           /* NVML's device name buffer (v2) */
#define VG_INV_REASON_MAX 64         /* "lost", "xid 79" */
#define VG_INV_NAME_MAX 254          /* qualified resource names (253) */
#define VG_INV_DIALECT_MAX 32        /* "vgpu", "gpushare", "timeSlicing", "cce" */

/* One kubelet resource a GPU contributes to. */
struct vg_inv_resource {
  char name[VG_INV_NAME_MAX];       /* e.g. nvidia.com/vgpu */
  char dialect[VG_INV_DIALECT_MAX]; /* kept as written: a reader skips one it does not know */
  int64_t count;                    /* device IDs (slots) this GPU advertises */
  int64_t unit;                     /* bytes one ID stands for; 0: IDs carry no memory */
  int64_t memory;                   /* vgpu: bytes its slices may add up to; -1: absent */
  int64_t cores;                    /* vgpu: percent its slices may add up to; -1: absent */
  int64_t max_vgpus;                /* cce: slices per GPU (maxVgpusPerGpu); -1: absent */
};

struct vg_inv_gpu {
  int64_t index; /* NVML index */
  char uuid[VG_INV_UUID_MAX];
  char type[VG_INV_TYPE_MAX];     /* NVML device name; may be empty */
  int64_t memory;                 /* bytes */
  int64_t numa;                   /* NUMA node; -1: unknown (null) */
  bool healthy;                   /* health "Healthy"; any other word is not */
  char reason[VG_INV_REASON_MAX]; /* why not healthy, when known; "" otherwise */
  int nres;
  struct vg_inv_resource res[VG_INV_MAX_RES];
};

struct vg_inv {
  char node[VG_INV_NODE_MAX];
  int64_t context_reserve; /* bytes set aside per slice for a CUDA context */
  int ngpus;
  struct vg_inv_gpu *gpu; /* ngpus entries, heap */
};

/* Parses the annotation's text into *inv (zeroed first; vg_inv_free it
 * either way). Returns 0, or -1 with err naming the field and why. */
int vg_inv_parse(const char *text, struct vg_inv *inv, struct vg_err *err);

/* The JSON document for inv (caller puts), keys in the order docs/inventory.md
 * shows. Checked like the parser: NULL with err for an inventory the parser
 * would refuse. */
json_object *vg_inv_to_json(const struct vg_inv *inv, struct vg_err *err);

/* Appends a GPU (index = its position, numa -1, healthy) to inv; NULL when
 * VG_INV_MAX_GPUS are there or out of memory. */
struct vg_inv_gpu *vg_inv_add_gpu(struct vg_inv *inv);

/* Appends a resource (memory, cores and max_vgpus absent) to g; NULL when
 * VG_INV_MAX_RES are there. */
struct vg_inv_resource *vg_inv_add_resource(struct vg_inv_gpu *g);

void vg_inv_free(struct vg_inv *inv);

#endif

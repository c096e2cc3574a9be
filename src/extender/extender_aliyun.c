/*
 * extender_aliyun.c -- Aliyun gpushare's pod annotations, written at bind.
 *
 * Aliyun's scheduler extender patches five annotations onto a pod asking for
 * gpushare memory when it binds it, and its users' tools (scripts, the
 * inspect plugin of its own repository, dashboards) read them. vgpu-scheduler
 * writes them in the same Binding that carries vgpu.io/assigned, with the
 * same meanings and units, so that those tools keep working:
 *
 *   ALIYUN_COM_GPU_MEM_IDX          the GPU's index on the node
 *   ALIYUN_COM_GPU_MEM_POD          the pod's memory units, over its containers
 *   ALIYUN_COM_GPU_MEM_DEV          that GPU's memory units
 *   ALIYUN_COM_GPU_MEM_ASSIGNED     "false"; the node agent sets "true" when
 *                                   it allocates (src/agent/gate.c)
 *   ALIYUN_COM_GPU_MEM_ASSUME_TIME  the bind's time, Unix nanoseconds
 *
 * Units are the node's memory unit for gpushare (MiB or GiB), as the pod's
 * request is. Aliyun puts a whole pod on one GPU; vgpu may give two gpushare
 * containers of one pod different GPUs, and then IDX and DEV are the first
 * one's (vgpu.io/assigned says where each container is). vgpu never reads
 * these back (docs/security.md).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "extender_int.h"

/* The index of the first GPU of the assignment's first entry for resource;
 * -1 when there is none. */
static int first_index(json_object *assignment, const char *resource) {
  json_object *ctrs = ext_get(assignment, "containers");
  for (size_t i = 0; ctrs && i < json_object_array_length(ctrs); i++) {
    json_object *c = json_object_array_get_idx(ctrs, i);
    const char *r = ext_get_str(c, "resource");
    json_object *gpus = ext_get(c, "gpus");
    if (r && strcmp(r, resource) == 0 && gpus && json_object_array_length(gpus) > 0)
      return json_object_get_int(ext_get(json_object_array_get_idx(gpus, 0), "index"));
  }
  return -1;
}

/* The memory units GPU index advertises for gpushare (its count of IDs). */
static int64_t gpu_units(const struct node_view *v, int index) {
  for (int j = 0; j < v->n; j++) {
    if (v->g[j].index != index) continue;
    for (int k = 0; k < v->g[j].nres; k++)
      if (v->g[j].res[k].dialect == VG_DIALECT_GPUSHARE) return v->g[j].res[k].count;
  }
  return 0;
}

static void put_number(json_object *ann, const char *key, long long n) {
  char text[32];
  snprintf(text, sizeof(text), "%lld", n);
  json_object_object_add(ann, key, json_object_new_string(text));
}

void ext_aliyun_annotations(json_object *ann, const struct pod_req *req, const struct node_view *v,
                            json_object *assignment) {
  int64_t total = 0;
  const char *resource = NULL;
  for (int i = 0; i < req->n; i++) {
    if (req->c[i].kind != EXT_KIND_GPUSHARE) continue;
    total += req->c[i].units;
    if (!resource) resource = req->c[i].resource;
  }
  if (!resource) return;
  int index = first_index(assignment, resource);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  put_number(ann, VG_ALIYUN_IDX, index);
  put_number(ann, VG_ALIYUN_POD, (long long)total);
  put_number(ann, VG_ALIYUN_DEV, (long long)gpu_units(v, index));
  json_object_object_add(ann, VG_ALIYUN_ASSIGNED, json_object_new_string("false"));
  put_number(ann, VG_ALIYUN_ASSUME_TIME, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
}

/*
 * extender_foreign.c -- nodes whose GPUs another device plugin serves.
 *
 * A mixed cluster keeps NVIDIA's own device plugin on some GPU nodes: no
 * vgpu agent there, so no vgpu.io/gpu-inventory annotation, only a plain
 * nvidia.com/gpu count in the Node's allocatable. The admission webhook and
 * the shipped managedResources send every nvidia.com/gpu pod here, and
 * kube-scheduler ignores the resource (ignoredByScheduler), so unless this
 * scheduler places such pods on those nodes nobody does: before, every one
 * of them failed there with "no vgpu.io/gpu-inventory annotation" and the
 * pods went unschedulable once vgpu's nodes were full (issue 29).
 *
 * Such a node is a "foreign GPU node" (--foreign-gpu-nodes allow, the
 * default). Its view has no GPUs of ours; what it holds is a count: its
 * allocatable nvidia.com/gpu and what the pods bound to it request of it,
 * counted as kube-scheduler counts requests (src/k8s/requests.c). A pod
 * whose only GPU ask is whole nvidia.com/gpu fits when the count left
 * covers its ask -- the check kube-scheduler would make if the resource
 * were not ignored; NVIDIA's plugin then picks the devices, so bind writes
 * no vgpu.io/assigned. Anything that needs vgpu (memory or compute slices,
 * other dialects, a GPU type/UUID selection, which needs the inventory)
 * fails there with a reason naming the container and what it asked.
 * Prioritize ranks such nodes below every vgpu node (extender.c).
 */
#include <stdio.h>
#include <string.h>

#include "extender_int.h"

void ext_foreign_view(struct node_view *v, int64_t gpus) {
  v->n = 0;
  v->reserve = 0;
  v->cpu_alloc = v->mem_alloc = -1;
  v->cpu_req = v->mem_req = 0;
  v->foreign = true;
  v->gpu_alloc = gpus;
  v->gpu_req = 0;
}

/* Why r cannot go to a node without vgpu ("" when it can): the first
 * container asking for more than whole nvidia.com/gpu, or a selection. */
static bool plain_gpus(const struct pod_req *r, char *why, size_t len) {
  for (int i = 0; i < r->n; i++) {
    const struct ctr_req *c = &r->c[i];
    char vgpu[2 * VG_RESOURCE_NAME_MAX];
    snprintf(vgpu, sizeof(vgpu), "%s/%s", ext_res(VG_ROLE_VGPU_MEM),
             strchr(ext_res(VG_ROLE_VGPU_CORES), '/') + 1);
    const char *asks = c->kind == EXT_KIND_GPUSHARE ? ext_res(VG_ROLE_GPUSHARE_MEM)
                       : c->kind == EXT_KIND_CCE    ? ext_res(VG_ROLE_CCE_MEM)
                       : c->vgpu_only               ? vgpu
                       : strcmp(c->resource, EXT_FOREIGN_RESOURCE) != 0 ? c->resource
                                                                        : NULL;
    if (asks) {
      snprintf(why, len,
               EXT_FOREIGN_WHY
               ": container %s asks for %s, which only nodes running "
               "vgpu-device-plugin serve; this node's GPUs are another plugin's "
               "whole %s",
               EXT_FOREIGN_RESOURCE, c->name, asks, EXT_FOREIGN_RESOURCE);
      return false;
    }
  }
  if (r->use_type[0] || r->nouse_type[0] || r->use_uuid[0] || r->nouse_uuid[0]) {
    snprintf(why, len,
             EXT_FOREIGN_WHY
             ": the pod selects GPUs by type or UUID (vgpu.io/use-gputype, "
             "...), which needs vgpu's inventory of the node's GPUs",
             EXT_FOREIGN_RESOURCE);
    return false;
  }
  return true;
}

bool ext_plain_gpus(const struct pod_req *r) {
  char why[8];
  return plain_gpus(r, why, sizeof(why));
}

int64_t ext_foreign_ask(const struct pod_req *r) {
  int64_t n = 0;
  for (int i = 0; i < r->n; i++) n += r->c[i].count;
  return n;
}

enum ext_reason ext_foreign_misfit(const struct pod_req *r, const struct node_view *v, char *why,
                                   size_t len) {
  if (r->n == 0) return EXT_R_NONE; /* no GPU asked: the node is a node without GPUs of ours */
  if (!plain_gpus(r, why, len)) return EXT_R_FOREIGN_ASK;
  int64_t ask = ext_foreign_ask(r), left = v->gpu_alloc - v->gpu_req;
  if (ask <= left) return EXT_R_NONE;
  snprintf(why, len,
           EXT_FOREIGN_WHY
           ": the pod asks for %lld %s, %lld of the node's %lld are not yet "
           "requested by its pods",
           EXT_FOREIGN_RESOURCE, (long long)ask, EXT_FOREIGN_RESOURCE,
           (long long)(left > 0 ? left : 0), (long long)v->gpu_alloc);
  return EXT_R_FOREIGN_FULL;
}

bool ext_foreign_fits(const struct pod_req *r, const struct node_view *v, char *why, size_t len) {
  return ext_foreign_misfit(r, v, why, len) == EXT_R_NONE;
}

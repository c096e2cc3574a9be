/*
 * fit.c -- whether a pod fits a node, and the default GPU choice.
 *
 * Rules (docs/placement.md, the paper policies): CPU and memory must fit; a GPU pod
 * needs a node with GPUs of an allowed model; a share (one GPU, < 1000 milli)
 * needs one GPU with at least that much free; N whole GPUs need N fully free
 * GPUs. Shares never span GPUs.
 */
#include "vg_sched.h"

bool vg_pod_is_share(const struct vg_pod *p) { return p->num_gpu == 1 && p->gpu_milli < VG_MILLI; }

bool vg_model_allowed(const struct vg_node *n, const struct vg_pod *p) {
  if (n->ngpu == 0 || n->model < 0) return false;
  return p->models == 0 || (p->models & (1u << n->model)) != 0;
}

static int gpus_with(const struct vg_node *n, int milli) {
  int count = 0;
  for (int g = 0; g < n->ngpu; g++) count += n->gpu_free[g] >= milli;
  return count;
}

bool vg_fit(const struct vg_node *n, const struct vg_pod *p) {
  if (n->cpu_free < p->cpu || n->mem_free < p->mem) return false;
  if (p->num_gpu == 0) return true;
  if (!vg_model_allowed(n, p)) return false;
  return gpus_with(n, p->gpu_milli) >= p->num_gpu;
}

bool vg_pick_tightest(const struct vg_node *n, const struct vg_pod *p, struct vg_pick *pick) {
  pick->n = 0;
  if (p->num_gpu == 0) return true;
  if (vg_pod_is_share(p)) {
    int best = -1;
    for (int g = 0; g < n->ngpu; g++)
      if (n->gpu_free[g] >= p->gpu_milli && (best < 0 || n->gpu_free[g] < n->gpu_free[best]))
        best = g;
    if (best < 0) return false;
    pick->gpu[pick->n++] = (uint8_t)best;
    return true;
  }
  for (int g = 0; g < n->ngpu && pick->n < p->num_gpu; g++)
    if (n->gpu_free[g] >= p->gpu_milli) pick->gpu[pick->n++] = (uint8_t)g;
  return pick->n == p->num_gpu;
}

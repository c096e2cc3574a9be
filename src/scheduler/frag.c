/*
 * frag.c -- the FGD fragmentation measure F_n(M) of one node (Weng et al.,
 * ATC'23; research/fgd-benchmark.md §3), in milli-GPU.
 *
 * For each task type m of the target workload, the node's free GPU share that
 * m could not use counts as fragment:
 *   - m needs no GPU, or may not use this GPU model: all free GPU share;
 *   - m fits (num_gpu GPUs each with >= its per-GPU milli, and its CPU):
 *     the free share of the GPUs that are each too small for m;
 *   - otherwise (GPU or CPU lacking): all free GPU share.
 * F_n(M) = sum_m p_m F_n(m). Memory plays no part.
 */
#include "vg_sched.h"

static double frag_of_type(const struct vg_pod *m, const struct vg_node *n, int64_t cpu_free,
                           const int *gpu_free, int total) {
  if (m->num_gpu == 0 || !vg_model_allowed(n, m) || cpu_free < m->cpu) return total;
  int fitting = 0, small = 0;
  for (int g = 0; g < n->ngpu; g++) {
    if (gpu_free[g] >= m->gpu_milli)
      fitting++;
    else
      small += gpu_free[g];
  }
  return fitting >= m->num_gpu ? small : total;
}

double vg_frag_node(const struct vg_workload *w, const struct vg_node *n, int64_t cpu_free,
                    const int *gpu_free) {
  int total = 0;
  for (int g = 0; g < n->ngpu; g++) total += gpu_free[g];
  if (total == 0) return 0;
  double f = 0;
  for (int t = 0; t < w->n; t++)
    f += w->types[t].weight * frag_of_type(&w->types[t].pod, n, cpu_free, gpu_free, total);
  return f;
}

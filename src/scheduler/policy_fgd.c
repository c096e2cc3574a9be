/*
 * policy_fgd.c -- Fragmentation Gradient Descent (Weng et al., ATC'23): place
 * the pod where the node's fragmentation F_n(M) grows least.
 *
 *   score = int(100 * sigmoid((F_before - F_after) / 1000))
 *
 * A share tries every GPU with room (the best GPU wins, lowest index on
 * ties); whole-GPU and CPU-only pods take the lowest-index free GPUs. The
 * integer truncation is the artifact's (framework scores are int64); it makes
 * increments within ~0.04 GPU tie, and the node order decides.
 */
#include <math.h>
#include <string.h>

#include "vg_sched.h"

static double frag_score(double before, double after) {
  double x = (before - after) / 1000.0;
  return (double)(int64_t)(100.0 / (1.0 + exp(-x)));
}

/* Measure f of node n once p has taken the GPU shares left in gpu_free. */
static double frag_after(struct vg_sched *s, vg_frag_fn f, const struct vg_node *n,
                         const struct vg_pod *p, const int *gpu_free) {
  return s->workload ? f(s->workload, n, n->cpu_free - p->cpu, n->mem_free - p->mem, gpu_free) : 0;
}

double vg_fgd_score_by(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick,
                       vg_frag_fn f, vg_share_bonus_fn bonus) {
  const struct vg_node *n = &s->cluster->nodes[i];
  double before = vg_sched_node_frag_by(s, i, f), best = -1;
  int tmp[VG_SCHED_MAX_GPUS];
  memcpy(tmp, n->gpu_free, sizeof(tmp));
  if (!vg_pod_is_share(p)) {
    vg_pick_tightest(n, p, pick);
    for (int k = 0; k < pick->n; k++) tmp[pick->gpu[k]] -= p->gpu_milli;
    return frag_score(before, frag_after(s, f, n, p, tmp));
  }
  for (int g = 0; g < n->ngpu; g++) {
    if (n->gpu_free[g] < p->gpu_milli) continue;
    bool seen = false; /* an earlier GPU with the same free share scores the same */
    for (int h = 0; h < g && !seen; h++) seen = n->gpu_free[h] == n->gpu_free[g];
    if (seen) continue;
    tmp[g] -= p->gpu_milli;
    double score = frag_score(before, frag_after(s, f, n, p, tmp)) +
                   (bonus ? bonus(s, n->gpu_free[g], tmp[g]) : 0);
    tmp[g] += p->gpu_milli;
    if (score > best) {
      best = score;
      pick->n = 1;
      pick->gpu[0] = (uint8_t)g;
    }
  }
  return best;
}

double vg_score_fgd(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick) {
  return vg_fgd_score_by(s, i, p, pick, vg_frag_node, NULL);
}

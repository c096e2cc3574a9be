/*
 * policy_spread.c -- `spread`: put each pod where the most GPU is free.
 *
 *   score = 100 * (GPU share free on the node before placing the pod)
 *                 / (the node's GPU capacity)
 *
 * The emptiest node wins, so pods land on lightly loaded nodes and GPUs
 * (less contention for time-sliced compute, a smaller blast radius when a
 * node fails), at the price of fragmentation. Within the node a share goes
 * to the GPU with the most free share (lowest index on ties); whole GPUs
 * take the lowest-index free ones. Nodes without GPUs score 0.
 */
#include "vg_sched.h"

static void pick_loosest(const struct vg_node *n, const struct vg_pod *p, struct vg_pick *pick) {
  if (!vg_pod_is_share(p)) {
    vg_pick_tightest(n, p, pick);
    return;
  }
  int best = -1;
  for (int g = 0; g < n->ngpu; g++)
    if (n->gpu_free[g] >= p->gpu_milli && (best < 0 || n->gpu_free[g] > n->gpu_free[best]))
      best = g;
  pick->n = best < 0 ? 0 : 1;
  if (best >= 0) pick->gpu[0] = (uint8_t)best;
}

double vg_score_spread(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick) {
  const struct vg_node *n = &s->cluster->nodes[i];
  pick_loosest(n, p, pick);
  if (n->ngpu == 0) return 0;
  return 100.0 * (double)vg_node_gpu_free(n) / ((double)n->ngpu * VG_MILLI);
}

/*
 * policy_binpack.c -- `binpack`: fill nodes before opening new ones.
 *
 *   score = 100 * (GPU share used on the node after placing the pod)
 *                 / (the node's GPU capacity)
 *
 * The fullest node after placement wins, so a nearly full node is finished
 * before an empty one is touched and whole nodes stay free for large pods
 * (HAMi's node policy of the same name, which sums slot, core and memory use;
 * here one GPU's use is its share in milli-GPU, the smaller of cores and
 * memory left, as the extender translates it). Within the node a share goes
 * to the tightest GPU. Nodes without GPUs score 0.
 */
#include "vg_sched.h"

double vg_score_binpack(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick) {
  const struct vg_node *n = &s->cluster->nodes[i];
  vg_pick_tightest(n, p, pick);
  if (n->ngpu == 0) return 0;
  double cap = (double)n->ngpu * VG_MILLI;
  double used = cap - (double)vg_node_gpu_free(n) + (double)p->num_gpu * p->gpu_milli;
  return 100.0 * used / cap;
}

/*
 * policy_bestfit.c -- the artifact's Best-fit (05-BestFit): the node with the
 * least weighted leftover of CPU and GPU after placement wins.
 *
 *   raw   = 0.5 (cpuLeft - cpuReq)/128000 + 0.5 (gpuLeft - gpuReq)/8000
 *   score = int((1 - raw) * 100)
 *
 * The truncation to an integer is kept on purpose: the kube-scheduler
 * framework scores are int64, so near-equal nodes tie and the node order
 * decides, as in the paper's runs. A share goes to the tightest GPU.
 */
#include "vg_sched.h"

#define MAX_SPEC_CPU 128000.0
#define MAX_SPEC_GPU 8000.0

double vg_score_bestfit(struct vg_sched *s, int i, const struct vg_pod *p, struct vg_pick *pick) {
  const struct vg_node *n = &s->cluster->nodes[i];
  vg_pick_tightest(n, p, pick);
  double cpu_left = (double)(n->cpu_free - p->cpu);
  double gpu_left = (double)(vg_node_gpu_free(n) - (int64_t)p->num_gpu * p->gpu_milli);
  double raw = 0.5 * cpu_left / MAX_SPEC_CPU + 0.5 * gpu_left / MAX_SPEC_GPU;
  return (double)(int64_t)((1.0 - raw) * 100.0);
}

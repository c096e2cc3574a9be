/*
 * sched.c -- one scheduling decision: filter every node, score the ones that
 * fit with the policy, take the highest score (ties: lowest node rank, the
 * artifact's "lexicographically smallest of seeded node names"), and apply it.
 * Keeps FGD's per-node F_n(M) cached until the node changes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vg_sched.h"

int vg_sched_init(struct vg_sched *s, struct vg_cluster *c, const struct vg_policy *policy,
                  const struct vg_workload *w, struct vg_err *err) {
  *s = (struct vg_sched){.cluster = c, .policy = policy, .workload = w};
  for (int k = 0; k < VG_SCHED_MEASURES; k++) {
    s->frag[k] = malloc(((size_t)c->n + 1) * sizeof(*s->frag[k]));
    if (!s->frag[k]) return vg_sched_free(s), vg_err_set(err, "out of memory for %d nodes", c->n);
    for (int i = 0; i < c->n; i++) s->frag[k][i] = NAN;
  }
  return 0;
}

void vg_sched_free(struct vg_sched *s) {
  for (int k = 0; k < VG_SCHED_MEASURES; k++) {
    free(s->frag[k]);
    s->frag[k] = NULL;
  }
}

/* The cache slot of measure f: its own, else the one used less lately. */
static double *frag_slot(struct vg_sched *s, vg_frag_fn f) {
  int k = 0;
  while (k < VG_SCHED_MEASURES && s->frag_fn[k] != f) k++;
  if (k == VG_SCHED_MEASURES) {
    k = (s->frag_last + 1) % VG_SCHED_MEASURES;
    for (int i = 0; i < s->cluster->n; i++) s->frag[k][i] = NAN;
    s->frag_fn[k] = f;
  }
  s->frag_last = k;
  return s->frag[k];
}

double vg_sched_node_frag_by(struct vg_sched *s, int i, vg_frag_fn f) {
  double *frag = frag_slot(s, f);
  if (isnan(frag[i])) {
    const struct vg_node *n = &s->cluster->nodes[i];
    frag[i] = s->workload ? f(s->workload, n, n->cpu_free, n->mem_free, n->gpu_free) : 0;
  }
  return frag[i];
}

double vg_sched_node_frag(struct vg_sched *s, int i) {
  return vg_sched_node_frag_by(s, i, vg_frag_node);
}

const int *vg_sched_gaps(struct vg_sched *s) {
  if (!s->gaps_valid) {
    memset(s->gaps, 0, sizeof(s->gaps));
    for (int i = 0; i < s->cluster->n; i++)
      for (int g = 0; g < s->cluster->nodes[i].ngpu; g++)
        s->gaps[s->cluster->nodes[i].gpu_free[g]]++;
    s->gaps_valid = true;
  }
  return s->gaps;
}

int vg_sched_select(struct vg_sched *s, const struct vg_pod *p, struct vg_pick *pick) {
  int best = -1;
  double best_score = 0;
  struct vg_pick cand;
  for (int i = 0; i < s->cluster->n; i++) {
    const struct vg_node *n = &s->cluster->nodes[i];
    if (!vg_fit(n, p)) continue;
    cand.n = 0;
    double score = s->policy->score(s, i, p, &cand);
    if (best < 0 || score > best_score ||
        (score == best_score && n->rank < s->cluster->nodes[best].rank)) {
      best = i;
      best_score = score;
      *pick = cand;
    }
  }
  return best;
}

int vg_sched_place(struct vg_sched *s, const struct vg_pod *p) {
  struct vg_pick pick;
  int i = vg_sched_select(s, p, &pick);
  if (i < 0) return -1;
  struct vg_node *n = &s->cluster->nodes[i];
  for (int k = 0; s->gaps_valid && k < pick.n; k++) s->gaps[n->gpu_free[pick.gpu[k]]]--;
  vg_node_apply(n, p, &pick);
  for (int k = 0; s->gaps_valid && k < pick.n; k++) s->gaps[n->gpu_free[pick.gpu[k]]]++;
  for (int k = 0; k < VG_SCHED_MEASURES; k++) s->frag[k][i] = NAN;
  return i;
}

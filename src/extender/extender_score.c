/*
 * extender_score.c -- the placement core's model of the candidates, and the
 * node policy run on it: what prioritize ranks nodes by, and what bind picks
 * GPUs by.
 *
 * One placement model (issue 28): the extender's nodes are what
 * vgpu-replay's are -- each node's allocatable CPU and memory less what its
 * pods request, its GPUs' free shares, its GPU model -- and so are its pods
 * (CPU, memory, GPUs, model constraint). The target workload is the learned
 * one (extender_workload.c), and the free-share counts the vgpu policy's
 * Sum-of-Squares term reads (vg_sched_gaps) are the whole cluster's, kept
 * as views are read (ext_gaps_note), not only the candidates'.
 *
 * Prioritize and bind both build their model here, from the same inputs, so
 * the GPUs the policy picked for the node prioritize ranked first are the
 * GPUs bind writes (tested for equality in tests/scheduler_extender).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"

/* The model's GPU model index of view v: its first GPU's type, registered in
 * x's table. Lock held. */
static int model_of(struct vg_ext *x, const struct node_view *v) {
  if (v->n == 0) return -1;
  const char *type = v->g[0].type[0] ? v->g[0].type : "(no type)";
  struct vg_cluster *t = &x->models;
  for (int m = 0; m < t->nmodels; m++)
    if (strcmp(t->models[m], type) == 0) return m;
  /* Beyond the table: the last model stands in (a pod pinned to a model
   * may then be scored as if this node had it; the fit itself is exact). */
  if (t->nmodels >= EXT_MAX_MODELS) return EXT_MAX_MODELS - 1;
  struct vg_err err = {{0}};
  return vg_cluster_model(t, type, &err);
}

void ext_gaps_note(struct vg_ext *x, struct node_entry *e, const struct node_view *v, bool usable) {
  for (int j = 0; j < e->ngaps; j++) x->gaps[e->gaps[j]]--;
  e->ngaps = 0;
  for (int j = 0; usable && j < v->n && j < VG_SCHED_MAX_GPUS; j++) {
    e->gaps[e->ngaps++] = (short)ext_free_milli(&v->g[j]);
    x->gaps[e->gaps[e->ngaps - 1]]++;
  }
  if (usable) e->model = model_of(x, v);
}

int ext_model_begin(struct vg_ext *x, const struct pod_req *r, struct ext_model *m,
                    struct vg_err *err) {
  memset(m, 0, sizeof(*m));
  vg_cluster_init(&m->cl);
  if (ext_learner_workload(x->learner, &m->w, err) != 0) return -1;
  pthread_mutex_lock(&x->lock);
  memcpy(m->cl.models, x->models.models, sizeof(m->cl.models));
  m->cl.nmodels = x->models.nmodels;
  memcpy(m->gaps, x->gaps, sizeof(m->gaps));
  pthread_mutex_unlock(&x->lock);
  m->models = ext_models_mask(r, (const char(*)[VG_SCHED_NAME_MAX])m->cl.models, m->cl.nmodels);
  return 0;
}

int ext_model_add(struct vg_ext *x, struct ext_model *m, const char *name,
                  const struct vg_node *core, struct vg_err *err) {
  struct vg_node n = *core;
  size_t len = strnlen(name, VG_SCHED_NAME_MAX - 1);
  memcpy(n.name, name, len); /* the name only labels the node here */
  n.name[len] = '\0';
  n.rank = (uint32_t)m->cl.n;
  pthread_mutex_lock(&x->lock);
  struct node_entry *e = ext_find_entry(x, name);
  n.model = e ? e->model : -1;
  pthread_mutex_unlock(&x->lock);
  int i = vg_cluster_add_node(&m->cl, &n, err);
  /* add_node starts the node empty: what it holds comes after. */
  if (i >= 0) {
    struct vg_node *d = &m->cl.nodes[i];
    d->cpu_free = n.cpu_free;
    d->mem_free = n.mem_free;
    memcpy(d->gpu_free, n.gpu_free, sizeof(n.gpu_free));
  }
  return i;
}

double ext_model_score(struct ext_model *m, const struct vg_policy *pol, int i, struct vg_pod *p,
                       struct vg_pick *pick, struct vg_err *err) {
  /* vg_sched sizes its per-node caches for the nodes there are: nodes
   * added since it started need a new one. */
  if (m->sched_ready && m->sched_nodes != m->cl.n) {
    vg_sched_free(&m->s);
    m->sched_ready = false;
  }
  if (!m->sched_ready) {
    if (vg_sched_init(&m->s, &m->cl, pol, &m->w, err) != 0) return NAN;
    memcpy(m->s.gaps, m->gaps, sizeof(m->gaps));
    m->s.gaps_valid = true;
    m->sched_ready = true;
    m->sched_nodes = m->cl.n;
  }
  p->models = m->models;
  pick->n = 0;
  if (!vg_fit(&m->cl.nodes[i], p)) return NAN;
  return pol->score(&m->s, i, p, pick);
}

void ext_model_end(struct ext_model *m) {
  if (m->sched_ready) vg_sched_free(&m->s);
  vg_cluster_free(&m->cl);
  vg_workload_free(&m->w);
}

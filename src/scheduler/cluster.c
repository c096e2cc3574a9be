/*
 * cluster.c -- the cluster model: a growable array of nodes plus the table of
 * GPU model names (pods refer to models by bit, nodes by index).
 */
#include <stdlib.h>
#include <string.h>

#include "vg_sched.h"

void vg_cluster_init(struct vg_cluster *c) { memset(c, 0, sizeof(*c)); }

void vg_cluster_free(struct vg_cluster *c) {
  free(c->nodes);
  vg_cluster_init(c);
}

int vg_cluster_model(struct vg_cluster *c, const char *name, struct vg_err *err) {
  for (int i = 0; i < c->nmodels; i++)
    if (strcmp(c->models[i], name) == 0) return i;
  if (c->nmodels == VG_SCHED_MAX_MODELS)
    return vg_err_set(err, "more than %d GPU models (at '%s')", VG_SCHED_MAX_MODELS, name);
  if (strlen(name) >= VG_SCHED_NAME_MAX)
    return vg_err_set(err, "GPU model name '%s' longer than %d characters", name,
                      VG_SCHED_NAME_MAX - 1);
  strcpy(c->models[c->nmodels], name);
  return c->nmodels++;
}

int vg_cluster_add_node(struct vg_cluster *c, const struct vg_node *node, struct vg_err *err) {
  if ((c->n & (c->n - 1)) == 0) { /* grow at powers of two */
    size_t cap = c->n ? (size_t)c->n * 2 : 16;
    struct vg_node *nodes = realloc(c->nodes, cap * sizeof(*nodes));
    if (!nodes) return vg_err_set(err, "out of memory for %zu nodes", cap);
    c->nodes = nodes;
  }
  struct vg_node *n = &c->nodes[c->n];
  *n = *node;
  n->cpu_free = n->cpu_cap;
  n->mem_free = n->mem_cap;
  for (int g = 0; g < n->ngpu; g++) n->gpu_free[g] = VG_MILLI;
  n->rank = (uint32_t)c->n;
  return c->n++;
}

int vg_cluster_copy(struct vg_cluster *dst, const struct vg_cluster *src, struct vg_err *err) {
  *dst = *src;
  dst->nodes = malloc(((size_t)src->n + 1) * sizeof(*dst->nodes));
  if (!dst->nodes) return vg_err_set(err, "out of memory copying %d nodes", src->n);
  memcpy(dst->nodes, src->nodes, (size_t)src->n * sizeof(*dst->nodes));
  return 0;
}

int64_t vg_cluster_gpu_capacity(const struct vg_cluster *c) {
  int64_t total = 0;
  for (int i = 0; i < c->n; i++) total += (int64_t)c->nodes[i].ngpu * VG_MILLI;
  return total;
}

int64_t vg_node_gpu_free(const struct vg_node *n) {
  int64_t total = 0;
  for (int g = 0; g < n->ngpu; g++) total += n->gpu_free[g];
  return total;
}

void vg_node_apply(struct vg_node *n, const struct vg_pod *p, const struct vg_pick *pick) {
  n->cpu_free -= p->cpu;
  n->mem_free -= p->mem;
  for (int k = 0; k < pick->n; k++) n->gpu_free[pick->gpu[k]] -= p->gpu_milli;
}

/*
 * sched_fixture.h -- tiny hand-built clusters for the placement tests.
 */
#ifndef VG_SCHED_FIXTURE_H
#define VG_SCHED_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vg_sched.h"

/* Adds a node with cpu milli-cores, mem MiB, a model and ngpu GPUs whose free
 * shares follow as ints. Returns its index. */
static inline int add_node(struct vg_cluster *c, const char *model, int64_t cpu, int64_t mem,
                           int ngpu, ...) {
  struct vg_node n;
  memset(&n, 0, sizeof(n));
  snprintf(n.name, sizeof(n.name), "node-%d", c->n);
  n.cpu_cap = cpu;
  n.mem_cap = mem;
  n.ngpu = ngpu;
  n.model = ngpu ? vg_cluster_model(c, model, NULL) : -1;
  int i = vg_cluster_add_node(c, &n, NULL);
  va_list ap;
  va_start(ap, ngpu);
  for (int g = 0; g < ngpu; g++) c->nodes[i].gpu_free[g] = va_arg(ap, int);
  va_end(ap);
  return i;
}

static inline struct vg_pod pod(int64_t cpu, int64_t mem, int num_gpu, int milli) {
  struct vg_pod p = {cpu, mem, num_gpu, milli, 0};
  return p;
}

#endif

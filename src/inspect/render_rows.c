/*
 * render_rows.c -- the cells both text layouts fill the same way: a node's
 * pods for -d, a pod's memory on a GPU, the unassigned memory (with "?" for
 * resources that carry no memory size) and percentages (truncated, as
 * Aliyun's are), the -d table's header, the cluster's total line.
 */
#include <stdlib.h>
#include <string.h>

#include "render.h"

static int row_cmp(const void *a, const void *b) {
  const struct ins_pod_row *x = a, *y = b;
  int c = strcmp(x->ns, y->ns);
  return c != 0 ? c : strcmp(x->pod, y->pod);
}

static bool same_pod(const struct ins_pod_row *r, const char *ns, const char *pod) {
  return strcmp(r->ns, ns) == 0 && strcmp(r->pod, pod) == 0;
}

static void add_row(struct ins_pod_row *rows, int *n, const char *ns, const char *pod) {
  for (int i = 0; i < *n; i++)
    if (same_pod(&rows[i], ns, pod)) return;
  rows[*n].ns = ns;
  rows[(*n)++].pod = pod;
}

struct ins_pod_row *ins_node_pods(const struct ins_node *n, int *count) {
  int cap = n->nun + 1;
  for (int i = 0; i < n->ngpus; i++) cap += n->gpu[i].nuses;
  struct ins_pod_row *rows = calloc((size_t)cap, sizeof(*rows));
  if (rows == NULL) return NULL;
  *count = 0;
  for (int i = 0; i < n->ngpus; i++)
    for (int k = 0; k < n->gpu[i].nuses; k++)
      add_row(rows, count, n->gpu[i].uses[k].ns, n->gpu[i].uses[k].pod);
  for (int i = 0; i < n->nun; i++) add_row(rows, count, n->un[i].ns, n->un[i].pod);
  qsort(rows, (size_t)*count, sizeof(*rows), row_cmp);
  return rows;
}

long long ins_pod_gpu_memory(const struct ins_node *n, const struct ins_pod_row *r, int gpu,
                             int *cores) {
  long long mem = 0;
  int share = 0;
  for (int k = 0; k < n->gpu[gpu].nuses; k++) {
    const struct ins_use *u = &n->gpu[gpu].uses[k];
    if (!same_pod(r, u->ns, u->pod)) continue;
    mem += u->u_memory;
    share += u->cores;
  }
  if (cores != NULL) *cores = share;
  return mem;
}

void ins_unassigned_cell(struct grid *g, int col, const struct ins_node *n,
                         const struct ins_pod_row *r) {
  long long mem = 0;
  bool unknown = false;
  for (int i = 0; i < n->nun; i++) {
    if (r != NULL && !same_pod(r, n->un[i].ns, n->un[i].pod)) continue;
    mem += n->un[i].u_memory;
    unknown |= n->un[i].memory < 0;
  }
  if (unknown && mem == 0)
    grid_set(g, col, "?");
  else
    grid_set(g, col, unknown ? "%lld+?" : "%lld", mem);
}

int ins_pct(long long part, long long whole) { return whole > 0 ? (int)(part * 100 / whole) : 0; }

void ins_node_memory_cell(struct grid *g, int col, const struct ins_node *n) {
  grid_set(g, col, n->unknown_memory ? "%lld+?/%lld" : "%lld/%lld", n->u_alloc, n->u_total);
}

void ins_detail_grid(struct grid *g, const struct ins_node *n, const char *unit,
                     const char *unassigned) {
  grid_init(g, 2 + n->ngpus + (n->nun > 0 ? 1 : 0));
  grid_row(g);
  grid_set(g, 0, "NAME");
  grid_set(g, 1, "NAMESPACE");
  for (int i = 0; i < n->ngpus; i++)
    grid_set(g, 2 + i, unit ? "GPU%d(Allocated %s)" : "GPU%d(Allocated)", i, unit);
  if (n->nun > 0)
    grid_set(g, 2 + n->ngpus, unit ? "%s(Allocated %s)" : "%s(Allocated)", unassigned, unit);
}

void ins_cluster_total(const struct ins_cluster *cl, bool detail, FILE *out) {
  fprintf(out,
          detail ? "\n\nAllocated/Total GPU Memory In Cluster:  %lld/%lld (%d%%)\n"
                 : "\nAllocated/Total GPU Memory In Cluster:\n%lld/%lld (%d%%)\n",
          cl->u_alloc, cl->u_total, cl->percent);
}

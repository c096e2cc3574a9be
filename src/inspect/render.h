/*
 * render.h -- what the two text layouts share: render_aliyun.c (the default,
 * Aliyun's table byte for byte) and render_wide.c (`-o wide`, with vgpu's
 * extra columns). Both read the numbers table.c computed; neither computes.
 */
#ifndef VG_INSPECT_RENDER_H
#define VG_INSPECT_RENDER_H

#include "grid.h"
#include "inspect.h"

/* One pod shown in a node's -d block. */
struct ins_pod_row {
  const char *ns, *pod;
};

/* The distinct pods of node n (on a GPU or unassigned), sorted by namespace
 * and name; NULL when out of memory. Free with free(). */
struct ins_pod_row *ins_node_pods(const struct ins_node *n, int *count);

/* Memory of pod r on GPU gpu of node n, in display units (0 if none); cores
 * gets its compute share there when not NULL. */
long long ins_pod_gpu_memory(const struct ins_node *n, const struct ins_pod_row *r, int gpu,
                             int *cores);

/* The unassigned-memory cell: "N", or "N+?" / "?" when some container's
 * resource carries no memory size. With pod r, only that pod's part. */
void ins_unassigned_cell(struct grid *g, int col, const struct ins_node *n,
                         const struct ins_pod_row *r);

/* part as a truncated percentage of whole (0 when whole is 0). */
int ins_pct(long long part, long long whole);

/* A node's -d pod table: the grid (NAME, NAMESPACE, one column per GPU,
 * and one for unassigned memory when the node holds any) with its header
 * row, "GPU0(Allocated)" or, given a unit, "GPU0(Allocated MiB)"; the
 * unassigned column is named `unassigned` the same way. */
void ins_detail_grid(struct grid *g, const struct ins_node *n, const char *unit,
                     const char *unassigned);

/* The cluster's total after the table: summary (detail false) or -d's. */
void ins_cluster_total(const struct ins_cluster *cl, bool detail, FILE *out);

/* "N/T", or "N+?/T" when the node holds memory of unknown size. */
void ins_node_memory_cell(struct grid *g, int col, const struct ins_node *n);

#endif

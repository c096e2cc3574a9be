/*
 * trace_load.c -- nodes and pods from the trace's CSV files into the
 * cluster model (columns: docs/placement.md, "Replay").
 */
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "trace.h"

#define MAX_CPU_MILLI (INT64_C(1) << 40)
#define MAX_MEM_MIB (INT64_C(1) << 40)

/* Column indices of names[0..n) into cols; all required. */
static int columns(const struct vg_csv *csv, const char *const *names, int n, int *cols,
                   struct vg_err *err) {
  for (int i = 0; i < n; i++) {
    cols[i] = vg_csv_column(csv, names[i]);
    if (cols[i] < 0)
      return vg_err_set(err, "%s:1: no column '%s' in the header", csv->path, names[i]);
  }
  return 0;
}

static int node_row(struct vg_csv *csv, const int *col, struct vg_cluster *c, struct vg_err *err) {
  struct vg_node n;
  memset(&n, 0, sizeof(n));
  int64_t gpu;
  const char *name = csv->field[col[0]], *model = csv->field[col[4]];
  if (*name == '\0' || strlen(name) >= VG_SCHED_NAME_MAX)
    return vg_err_set(err, "%s:%d: sn: empty or longer than %d characters", csv->path, csv->lineno,
                      VG_SCHED_NAME_MAX - 1);
  strcpy(n.name, name);
  if (vg_csv_int(csv, col[1], 0, MAX_CPU_MILLI, &n.cpu_cap, err) ||
      vg_csv_int(csv, col[2], 0, MAX_MEM_MIB, &n.mem_cap, err) ||
      vg_csv_int(csv, col[3], 0, VG_SCHED_MAX_GPUS, &gpu, err))
    return -1;
  n.ngpu = (int)gpu;
  n.model = -1;
  if (n.ngpu > 0 && *model == '\0')
    return vg_err_set(err, "%s:%d: model: empty for a node with %d GPUs", csv->path, csv->lineno,
                      n.ngpu);
  if (n.ngpu > 0 && (n.model = vg_cluster_model(c, model, err)) < 0) return -1;
  return vg_cluster_add_node(c, &n, err) < 0 ? -1 : 0;
}

int vg_trace_load_nodes(const char *path, struct vg_cluster *c, struct vg_err *err) {
  static const char *const names[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  struct vg_csv csv;
  int col[5], rc;
  if (vg_csv_open(&csv, path, err)) return -1;
  if (columns(&csv, names, 5, col, err)) return vg_csv_close(&csv), -1;
  while ((rc = vg_csv_next(&csv, err)) == 1)
    if (node_row(&csv, col, c, err)) break;
  vg_csv_close(&csv);
  if (rc == 1 || rc < 0) return -1;
  if (c->n == 0) return vg_err_set(err, "%s: no nodes", path);
  return 0;
}

/* gpu_spec "A|B|C" into a model mask (models new to c are added). */
static int spec_mask(struct vg_csv *csv, char *spec, struct vg_cluster *c, uint32_t *mask,
                     struct vg_err *err) {
  *mask = 0;
  for (char *save = NULL, *m = strtok_r(spec, "|", &save); m; m = strtok_r(NULL, "|", &save)) {
    struct vg_err why;
    int idx = vg_cluster_model(c, m, &why);
    if (idx < 0) return vg_err_set(err, "%s:%d: gpu_spec: %s", csv->path, csv->lineno, why.msg);
    *mask |= 1u << idx;
  }
  return 0;
}

static int pod_row(struct vg_csv *csv, const int *col, int spec_col, struct vg_cluster *c,
                   struct vg_pod *p, struct vg_err *err) {
  int64_t num, milli;
  memset(p, 0, sizeof(*p));
  if (vg_csv_int(csv, col[0], 0, MAX_CPU_MILLI, &p->cpu, err) ||
      vg_csv_int(csv, col[1], 0, MAX_MEM_MIB, &p->mem, err) ||
      vg_csv_int(csv, col[2], 0, VG_SCHED_MAX_GPUS, &num, err) ||
      vg_csv_int(csv, col[3], 0, VG_MILLI, &milli, err))
    return -1;
  if ((num == 0) != (milli == 0))
    return vg_err_set(err, "%s:%d: num_gpu %lld with gpu_milli %lld (both or neither must be 0)",
                      csv->path, csv->lineno, (long long)num, (long long)milli);
  p->num_gpu = (int)num;
  p->gpu_milli = (int)milli;
  if (spec_col >= 0 && spec_mask(csv, csv->field[spec_col], c, &p->models, err)) return -1;
  return 0;
}

static int push_pod(struct vg_pod **pods, int *n, const struct vg_pod *p, struct vg_err *err) {
  if ((*n & (*n - 1)) == 0) {
    size_t cap = *n ? (size_t)*n * 2 : 64;
    struct vg_pod *grown = realloc(*pods, cap * sizeof(**pods));
    if (!grown) return vg_err_set(err, "out of memory for %zu pods", cap);
    *pods = grown;
  }
  (*pods)[(*n)++] = *p;
  return 0;
}

int vg_trace_load_pods(const char *path, struct vg_cluster *c, struct vg_pod **pods, int *npods,
                       struct vg_err *err) {
  static const char *const names[] = {"cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
  struct vg_csv csv;
  struct vg_pod p;
  int col[4], rc;
  *pods = NULL;
  *npods = 0;
  if (vg_csv_open(&csv, path, err)) return -1;
  if (columns(&csv, names, 4, col, err)) return vg_csv_close(&csv), -1;
  int spec_col = vg_csv_column(&csv, "gpu_spec");
  while ((rc = vg_csv_next(&csv, err)) == 1)
    if (pod_row(&csv, col, spec_col, c, &p, err) || push_pod(pods, npods, &p, err)) break;
  vg_csv_close(&csv);
  if (rc == 0 && *npods == 0) rc = vg_err_set(err, "%s: no pods", path);
  if (rc != 0) {
    free(*pods);
    *pods = NULL;
    *npods = 0;
    return -1;
  }
  return 0;
}

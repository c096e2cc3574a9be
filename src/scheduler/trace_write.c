/*
 * trace_write.c -- a pod list (or a node list) back to the trace's CSV
 * form, so that a generated workload family point (mix.c), a seed's arrival
 * list or node subset (replay.c) can be kept, inspected, or fed to another
 * tool; vg_trace_load_pods / vg_trace_load_nodes read them back unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trace.h"

/* The model names of mask, '|'-separated, as the trace writes gpu_spec. */
static void spec_of(const struct vg_cluster *c, uint32_t mask, char *out, size_t len) {
  size_t used = 0;
  out[0] = '\0';
  for (int m = 0; m < c->nmodels && used < len; m++)
    if (mask & (1u << m))
      used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "|" : "", c->models[m]);
}

int vg_trace_write_pods(const char *path, const struct vg_cluster *c, const struct vg_pod *pods,
                        int n, struct vg_err *err) {
  FILE *f = fopen(path, "w");
  if (!f) return vg_err_set(err, "%s: %s", path, strerror(errno));
  fprintf(f, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n");
  for (int i = 0; i < n; i++) {
    char spec[VG_SCHED_MAX_MODELS * (VG_SCHED_NAME_MAX + 1)];
    spec_of(c, pods[i].models, spec, sizeof(spec));
    fprintf(f, "pod-%05d,%lld,%lld,%d,%d,%s\n", i, (long long)pods[i].cpu, (long long)pods[i].mem,
            pods[i].num_gpu, pods[i].num_gpu ? pods[i].gpu_milli : 0, spec);
  }
  if (fclose(f) != 0) return vg_err_set(err, "%s: %s", path, strerror(errno));
  return 0;
}

int vg_trace_write_nodes(const char *path, const struct vg_cluster *c, struct vg_err *err) {
  FILE *f = fopen(path, "w");
  if (!f) return vg_err_set(err, "%s: %s", path, strerror(errno));
  fprintf(f, "sn,cpu_milli,memory_mib,gpu,model\n");
  for (int i = 0; i < c->n; i++) {
    const struct vg_node *n = &c->nodes[i];
    fprintf(f, "%s,%lld,%lld,%d,%s\n", n->name, (long long)n->cpu_cap, (long long)n->mem_cap,
            n->ngpu, n->model >= 0 ? c->models[n->model] : "");
  }
  if (fclose(f) != 0) return vg_err_set(err, "%s: %s", path, strerror(errno));
  return 0;
}

/* metrics.c -- see metrics.h and docs/metrics.md. */
#include "metrics.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "binder.h"
#include "gate.h"
#include "gpu_usage.h"
#include "plugin.h"
#include "podresources.h"
#include "prom.h"
#include "region.h"
#include "slot.h"
#include "slot_gc.h"
#include "steer.h"

#define LIST_TIMEOUT_MS 2000
#define NAME_MAX_LEN 254

/* ---- what is collected per scrape ---- */

struct ctr_dev {
  char uuid[VG_UUID_LEN];
  uint64_t limit, used, total;
  unsigned sm_limit;
  double sm_used_pct;
};

struct ctr {
  char slot[17];
  char ns[NAME_MAX_LEN], pod[NAME_MAX_LEN], name[NAME_MAX_LEN];
  bool pending;
  int procs;
  int ndev;
  struct ctr_dev dev[VG_MAX_DEVICES];
};

/* One GPU's labels and sums, computed once per scrape for all its families. */
struct gpu_row {
  const struct vg_gpu *g;
  const struct vg_gpu_usage *u; /* NULL when NVML did not answer for it */
  struct vg_textbuf labels;     /* node, gpu, uuid */
  uint64_t allocated;
  int containers;
};

struct scrape {
  const struct vg_metrics_sources *src;
  struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus;
  struct vg_gpu_usage usage[VG_MAX_GPUS];
  unsigned nusage;
  bool nvml_up, podresources_up;
  struct gpu_row rows[VG_MAX_GPUS]; /* print_gpus' per-GPU work */
  struct ctr *ctrs;                 /* the containers the kubelet lists, with a region */
  size_t nctrs, cap;
  unsigned stale;                         /* slot directories no listed container owns */
  struct vg_audit_gpu audit[VG_MAX_GPUS]; /* the memory audit's last pass */
  unsigned naudit;
};

/* PodResources: one entry per container and resource; its slot is named by its IDs. */
static int on_listed(const struct vg_pod_devices *d, void *arg) {
  struct scrape *s = arg;
  char slot[17];
  if (vg_slot_name(d->ids, d->n_ids, slot) != 0) return 0;
  for (size_t i = 0; i < s->nctrs; i++)
    if (strcmp(s->ctrs[i].slot, slot) == 0) return 0;
  if (s->nctrs == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    struct ctr *v = realloc(s->ctrs, cap * sizeof(*v));
    if (v == NULL) return -1;
    s->ctrs = v, s->cap = cap;
  }
  struct ctr *c = &s->ctrs[s->nctrs++];
  memset(c, 0, sizeof(*c));
  memcpy(c->slot, slot, sizeof(slot));
  snprintf(c->ns, sizeof(c->ns), "%s", d->ns);
  snprintf(c->pod, sizeof(c->pod), "%s", d->pod);
  snprintf(c->name, sizeof(c->name), "%s", d->container);
  c->ndev = -1; /* no region (yet): time-sliced without isolation, or not ours */
  return 0;
}

/* A container's region file, read without taking its lock. */
static void read_region(const char *slot_dir, struct ctr *c) {
  struct vg_shm shm;
  struct vg_err err;
  if (vg_region_open_slot(&shm, slot_dir, true, &err) != 0) return;
  const struct vg_region *r = vg_region_of(&shm);
  c->pending = vg_region_pending(r);
  c->ndev = 0;
  for (uint32_t d = 0; d < r->device_count && d < VG_MAX_DEVICES; d++) {
    struct ctr_dev *cd = &c->dev[c->ndev++];
    snprintf(cd->uuid, sizeof(cd->uuid), "%.*s", VG_UUID_LEN - 1, r->dev[d].uuid);
    cd->limit = vg_region_mem_limit(r, (int)d);
    cd->used = vg_region_mem_used(r, (int)d);
    cd->total = r->dev[d].mem_total;
    cd->sm_limit = __atomic_load_n(&r->dev[d].sm_limit, __ATOMIC_RELAXED);
    cd->sm_used_pct = vg_region_sm_used_pct(&r->dev[d]);
  }
  for (unsigned i = 0; i < VG_MAX_PROCS; i++)
    if (r->proc[i].pid != 0 && vg_shm_slot_alive(&shm, i)) c->procs++;
  vg_shm_close(&shm);
}

static void read_slots(struct scrape *s) {
  char dir[VG_CONFIG_PATH_MAX + 16];
  snprintf(dir, sizeof(dir), "%s/slots", s->src->state_dir);
  DIR *d = opendir(dir);
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!vg_slot_name_valid(e->d_name)) continue;
    struct ctr *c = NULL;
    for (size_t i = 0; i < s->nctrs && c == NULL; i++)
      if (strcmp(s->ctrs[i].slot, e->d_name) == 0) c = &s->ctrs[i];
    if (c == NULL) {
      s->stale++; /* its pod is gone, or the kubelet was not asked (PodResources down) */
      continue;
    }
    char path[sizeof(dir) + sizeof(e->d_name) + 2]; /* never cut: d_name is any entry */
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    read_region(path, c);
  }
  closedir(d);
}

static void collect(struct scrape *s) {
  struct vg_plugin *p = s->src->plugin;
  pthread_mutex_lock(&p->lock);
  s->ngpus = p->ngpus;
  memcpy(s->gpus, p->gpus, p->ngpus * sizeof(s->gpus[0]));
  pthread_mutex_unlock(&p->lock);
  char err[256];
  s->nvml_up = vg_gpu_usage_read(s->usage, VG_MAX_GPUS, &s->nusage, err, sizeof(err)) == 0;
  struct vg_err e;
  const char *sock =
      s->src->podresources_socket != NULL ? s->src->podresources_socket : VG_PODRESOURCES_SOCKET;
  s->podresources_up = vg_podresources_list(sock, LIST_TIMEOUT_MS, on_listed, s, &e) == 0;
  read_slots(s);
  if (s->src->audit != NULL) s->naudit = vg_audit_gpus(s->src->audit, s->audit, VG_MAX_GPUS);
}

/* ---- printing ---- */

static int gpu_index(const struct scrape *s, const char *uuid) {
  for (unsigned i = 0; i < s->ngpus; i++)
    if (strcmp(s->gpus[i].uuid, uuid) == 0) return (int)s->gpus[i].index;
  return -1;
}

static const struct vg_audit_gpu *audit_of(const struct scrape *s, const char *uuid) {
  for (unsigned i = 0; i < s->naudit; i++)
    if (strcmp(s->audit[i].uuid, uuid) == 0) return &s->audit[i];
  return NULL;
}

static const struct vg_gpu_usage *usage_of(const struct scrape *s, const char *uuid) {
  for (unsigned i = 0; s->nvml_up && i < s->nusage; i++)
    if (strcmp(s->usage[i].uuid, uuid) == 0) return &s->usage[i];
  return NULL;
}

/* node, gpu, uuid */
static void gpu_labels(const struct scrape *s, const struct vg_gpu *g, struct vg_textbuf *l) {
  char index[16];
  snprintf(index, sizeof(index), "%u", g->index);
  vg_prom_label(l, "node", s->src->node);
  vg_prom_label(l, "gpu", index);
  vg_prom_label(l, "uuid", g->uuid);
}

/* A GPU's memory given to containers: their limits, or all of it for a
 * container without one. */
static void gpu_allocation(const struct scrape *s, const char *uuid, uint64_t total,
                           uint64_t *bytes, int *containers) {
  *bytes = 0, *containers = 0;
  for (size_t i = 0; i < s->nctrs; i++)
    for (int d = 0; d < s->ctrs[i].ndev; d++) {
      const struct ctr_dev *cd = &s->ctrs[i].dev[d];
      if (strcmp(cd->uuid, uuid) != 0) continue;
      *bytes += cd->limit != 0 ? cd->limit : total;
      (*containers)++;
    }
}

static bool compute_judged(const struct scrape *s, const char *uuid) {
  return vg_compute_judged(vg_backstop_compute(vg_audit_backstop(s->src->audit)), uuid);
}

static void print_gpus(struct vg_textbuf *out, const struct scrape *s, struct gpu_row *rows) {
  enum {
    INFO,
    HEALTHY,
    TOTAL,
    ALLOCATED,
    USED,
    UTILIZATION,
    CONTAINERS,
    UNACCOUNTED,
    JUDGED,
    FAMILIES
  };
  static const struct {
    const char *name, *help;
  } fam[FAMILIES] = {
      {"vgpu_gpu_info", "A GPU of the node (value 1), with its model."},
      {"vgpu_gpu_healthy", "1 when the GPU is Healthy for the kubelet, 0 when Unhealthy."},
      {"vgpu_gpu_memory_total_bytes", "The GPU's memory."},
      {"vgpu_gpu_memory_allocated_bytes",
       "Memory promised to the containers holding the GPU (their limits; all of it for one "
       "without a limit)."},
      {"vgpu_gpu_memory_used_bytes", "Memory in use on the GPU by every process (NVML)."},
      {"vgpu_gpu_utilization_ratio", "Share of the last sample period a kernel ran (NVML)."},
      {"vgpu_gpu_containers", "Containers holding a slice of the GPU."},
      {"vgpu_gpu_unaccounted_memory_bytes",
       "Memory in use on the GPU that no container's region accounts for, beyond the idle "
       "baseline and the processes' contexts (the memory audit's last pass; a container "
       "running without libvgpu)."},
      {"vgpu_gpu_compute_judged",
       "1 when the backstop judges compute on the GPU; 0 when NVML does not measure "
       "per-process utilisation there, so a container running without libvgpu uses its "
       "compute unreported."},
  };
  for (unsigned i = 0; i < s->ngpus; i++) {
    struct gpu_row *r = &rows[i];
    r->g = &s->gpus[i];
    r->u = usage_of(s, r->g->uuid);
    gpu_labels(s, r->g, &r->labels);
    gpu_allocation(s, r->g->uuid, r->g->memory, &r->allocated, &r->containers);
  }
  struct vg_textbuf info = {0}; /* a GPU's labels and its model */
  for (int k = 0; k < FAMILIES; k++) {
    vg_prom_family(out, fam[k].name, "gauge", fam[k].help);
    for (unsigned i = 0; i < s->ngpus; i++) {
      const struct gpu_row *r = &rows[i];
      const char *n = fam[k].name;
      const struct vg_textbuf *l = &r->labels;
      switch (k) {
        case INFO:
          vg_textbuf_reset(&info);
          vg_textbuf_add(&info, l->data, l->len);
          vg_prom_label(&info, "model", r->g->name);
          vg_prom_sample(out, n, &info, "1");
          break;
        case HEALTHY:
          vg_prom_sample(out, n, l, "%d", r->g->healthy ? 1 : 0);
          break;
        case TOTAL:
          vg_prom_sample(out, n, l, "%llu", (unsigned long long)r->g->memory);
          break;
        case ALLOCATED:
          vg_prom_sample(out, n, l, "%llu", (unsigned long long)r->allocated);
          break;
        case USED:
          if (r->u != NULL)
            vg_prom_sample(out, n, l, "%llu", (unsigned long long)r->u->memory_used);
          break;
        case UTILIZATION:
          if (r->u != NULL && r->u->utilization >= 0)
            vg_prom_sample(out, n, l, "%.2f", r->u->utilization / 100.0);
          break;
        case CONTAINERS:
          vg_prom_sample(out, n, l, "%d", r->containers);
          break;
        case UNACCOUNTED: {
          const struct vg_audit_gpu *a = audit_of(s, r->g->uuid);
          if (a != NULL && a->auditable)
            vg_prom_sample(out, n, l, "%llu", (unsigned long long)a->unaccounted);
          break;
        }
        default:
          if (s->src->audit != NULL && r->u != NULL)
            vg_prom_sample(out, n, l, "%d", compute_judged(s, r->g->uuid) ? 1 : 0);
      }
    }
  }
  vg_textbuf_free(&info);
}

/* node, namespace, pod, container (+ gpu, uuid for a device), into the
 * emptied l. */
static void ctr_labels(const struct scrape *s, const struct ctr *c, const struct ctr_dev *d,
                       struct vg_textbuf *l) {
  vg_textbuf_reset(l);
  vg_prom_label(l, "node", s->src->node);
  vg_prom_label(l, "namespace", c->ns);
  vg_prom_label(l, "pod", c->pod);
  vg_prom_label(l, "container", c->name);
  if (d == NULL) return;
  char index[16];
  snprintf(index, sizeof(index), "%d", gpu_index(s, d->uuid));
  vg_prom_label(l, "gpu", index);
  vg_prom_label(l, "uuid", d->uuid);
}

/* The backstop's last reading of a container on a GPU for family k of
 * print_backstop, formatted into buf; false when there is none. */
static bool backstop_value(struct vg_backstop *b, int k, const char *slot, const char *uuid,
                           char *buf, size_t len) {
  uint64_t nvml;
  unsigned sm;
  bool over;
  if (k < 2 && vg_backstop_reading(b, slot, uuid, &nvml, &over))
    return snprintf(buf, len, "%llu", (unsigned long long)(k == 0 ? nvml : over)), true;
  if (k >= 2 && vg_compute_reading(vg_backstop_compute(b), slot, uuid, &sm, &over))
    return k == 2 ? snprintf(buf, len, "%.2f", sm / 100.0) : snprintf(buf, len, "%d", over), true;
  return false;
}

/* What NVML says each container's processes hold and use per GPU, and
 * whether that is over the grant (backstop.h, backstop_compute.h): series
 * only where the last audit pass saw a process of the container on the GPU
 * (for compute: one that ran kernels there while the container is listed). */
static void print_backstop(struct vg_textbuf *out, struct vg_textbuf *l, const struct scrape *s) {
  struct vg_backstop *b = vg_audit_backstop(s->src->audit);
  static const char *const name[] = {
      "vgpu_container_gpu_memory_nvml_bytes", "vgpu_container_over_grant",
      "vgpu_container_gpu_sm_nvml_ratio", "vgpu_container_compute_over_grant"};
  static const char *const help[] = {
      "Memory NVML says the container's processes hold on the GPU, CUDA contexts included, "
      "whether or not they run under libvgpu (the backstop's last pass).",
      "1 when that is more than the container's grant allows: a process is using the GPU "
      "without libvgpu (the Event GPUMemoryOverGrant names it).",
      "Share of the GPU's compute NVML's per-process utilisation says the container's "
      "processes used, whether or not they run under libvgpu (the backstop's last pass).",
      "1 while that has been above the container's compute grant plus --compute-tolerance "
      "for --compute-sustain: a process is running kernels without libvgpu (the Event "
      "GPUComputeOverGrant names it)."};
  for (int k = 0; k < 4; k++) {
    vg_prom_family(out, name[k], "gauge", help[k]);
    for (size_t i = 0; i < s->nctrs; i++)
      for (int d = 0; d < s->ctrs[i].ndev; d++) {
        char v[32];
        const struct ctr_dev *cd = &s->ctrs[i].dev[d];
        if (!backstop_value(b, k, s->ctrs[i].slot, cd->uuid, v, sizeof(v))) continue;
        ctr_labels(s, &s->ctrs[i], cd, l);
        vg_prom_sample(out, name[k], l, "%s", v);
      }
  }
}

/* Per container with a region (no device): the family's value for each. */
static void per_container(struct vg_textbuf *out, struct vg_textbuf *l, const struct scrape *s,
                          const char *name, const char *help,
                          int (*value)(const struct scrape *, const struct ctr *)) {
  vg_prom_family(out, name, "gauge", help);
  for (size_t i = 0; i < s->nctrs; i++) {
    if (s->ctrs[i].ndev < 0) continue;
    ctr_labels(s, &s->ctrs[i], NULL, l);
    vg_prom_sample(out, name, l, "%d", value(s, &s->ctrs[i]));
  }
}

static int procs(const struct scrape *s, const struct ctr *c) {
  (void)s;
  return c->procs;
}

static int unenforced(const struct scrape *s, const struct ctr *c) {
  return vg_audit_slot_unenforced(s->src->audit, c->slot) ? 1 : 0;
}

static int pending(const struct scrape *s, const struct ctr *c) {
  (void)s;
  return c->pending ? 1 : 0;
}

static void print_containers(struct vg_textbuf *out, const struct scrape *s) {
  static const struct {
    const char *name, *help;
  } fam[] = {
      {"vgpu_container_memory_limit_bytes",
       "The container's memory limit on the GPU (the GPU's memory when unlimited)."},
      {"vgpu_container_memory_used_bytes", "Memory the container's processes hold on the GPU."},
      {"vgpu_container_sm_limit_ratio", "The container's compute limit (1 when unlimited)."},
      {"vgpu_container_sm_utilization_ratio",
       "GPU time the container used in the last second, as a share of the GPU."},
  };
  struct vg_textbuf l = {0};
  for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
    const char *n = fam[k].name;
    vg_prom_family(out, n, "gauge", fam[k].help);
    for (size_t i = 0; i < s->nctrs; i++)
      for (int d = 0; d < s->ctrs[i].ndev; d++) {
        const struct ctr_dev *cd = &s->ctrs[i].dev[d];
        ctr_labels(s, &s->ctrs[i], cd, &l);
        if (k == 0)
          vg_prom_sample(out, n, &l, "%llu",
                         (unsigned long long)(cd->limit != 0 ? cd->limit : cd->total));
        if (k == 1) vg_prom_sample(out, n, &l, "%llu", (unsigned long long)cd->used);
        if (k == 2)
          vg_prom_sample(out, n, &l, "%.2f", cd->sm_limit != 0 ? cd->sm_limit / 100.0 : 1.0);
        if (k == 3) vg_prom_sample(out, n, &l, "%.4f", cd->sm_used_pct / 100.0);
      }
  }
  per_container(out, &l, s, "vgpu_container_processes",
                "Live processes of the container using a GPU.", procs);
  if (s->src->audit != NULL) {
    per_container(out, &l, s, "vgpu_container_unenforced",
                  "1 when no process of the container ever joined its region while its GPU holds "
                  "memory no region accounts for: libvgpu most likely did not load there.",
                  unenforced);
    print_backstop(out, &l, s);
  }
  per_container(out, &l, s, "vgpu_container_limits_pending",
                "1 while the container's limits wait for the binder (libvgpu holds its GPU calls).",
                pending);
  vg_textbuf_free(&l);
}

static void counter(struct vg_textbuf *out, const char *name, const char *help,
                    const struct vg_textbuf *l, uint64_t value) {
  vg_prom_family(out, name, "counter", help);
  vg_prom_sample(out, name, l, "%llu", (unsigned long long)value);
}

/* A counter family with one series per value of one label (`result`,
 * `source`) beside node. */
struct result {
  const char *result;
  uint64_t n;
};

static void by_label(struct vg_textbuf *out, const char *name, const char *help, const char *node,
                     const char *label, const struct result *r, size_t n) {
  struct vg_textbuf l = {0};
  vg_prom_family(out, name, "counter", help);
  for (size_t i = 0; i < n; i++) {
    vg_textbuf_reset(&l);
    vg_prom_label(&l, "node", node);
    vg_prom_label(&l, label, r[i].result);
    vg_prom_sample(out, name, &l, "%llu", (unsigned long long)r[i].n);
  }
  if (l.oom) out->oom = true;
  vg_textbuf_free(&l);
}

static void print_agent_counters(struct vg_textbuf *out, const struct scrape *s,
                                 const struct vg_textbuf *l) {
  const char *node = s->src->node;
  if (s->src->slot_gc != NULL) {
    struct vg_slot_gc_stats g;
    vg_slot_gc_get_stats(s->src->slot_gc, &g);
    counter(out, "vgpu_slots_removed_total",
            "Slot directories of gone containers the collector removed.", l, g.removed);
  }
  if (s->src->audit != NULL) {
    struct vg_audit_stats a;
    vg_audit_get_stats(s->src->audit, &a);
    counter(out, "vgpu_unaccounted_memory_detections_total",
            "Times the memory audit found a GPU holding more than its regions account for.", l,
            a.detections);
    counter(out, "vgpu_audit_errors_total",
            "Memory audit passes that could not read NVML or PodResources.", l, a.errors);
    struct vg_backstop_stats bs;
    vg_backstop_get_stats(vg_audit_backstop(s->src->audit), &bs);
    counter(out, "vgpu_backstop_detections_total",
            "Times a container's processes were found holding more GPU memory than its grant.", l,
            bs.detections);
    counter(out, "vgpu_backstop_compute_detections_total",
            "Times a container's processes used more compute than its grant, sustained.", l,
            bs.compute_detections);
    counter(out, "vgpu_backstop_evictions_total",
            "Pods evicted for either (--backstop-policy evict).", l, bs.evictions);
  }
  if (s->src->binder != NULL) {
    struct vg_binder_stats b;
    vg_binder_get_stats(s->src->binder, &b);
    counter(out, "vgpu_binder_passes_total", "Binder passes over the kubelet's pod list.", l,
            b.passes);
    counter(out, "vgpu_binder_bound_total", "Containers whose limits the binder wrote.", l,
            b.bound);
    counter(out, "vgpu_untrusted_regions_total",
            "Container region files found held, forged or replaced by their container.", l,
            b.untrusted);
    const struct result r[] = {{"podresources", b.list_errors}, {"api", b.api_errors}};
    by_label(out, "vgpu_binder_errors_total", "Binder reads that failed, by source.", node,
             "source", r, 2);
  }
  if (s->src->steer != NULL) {
    struct vg_steer_stats st;
    vg_steer_get_stats(s->src->steer, &st);
    const struct result r[] = {{"steered", st.steered},
                               {"unassigned", st.unassigned},
                               {"no_room", st.no_room},
                               {"error", st.errors}};
    by_label(out, "vgpu_steer_requests_total",
             "GetPreferredAllocation requests, by what decided the answer.", node, "result", r, 4);
    counter(out, "vgpu_steer_decisive_total",
            "Steered answers where the pod under admission was unambiguous.", l, st.decisive);
    counter(out, "vgpu_steer_malformed_assignments_total",
            "vgpu.io/assigned annotations that did not parse.", l, st.malformed);
  }
  if (s->src->gate != NULL) {
    struct vg_gate_stats g;
    vg_gate_get_stats(s->src->gate, &g);
    const struct result r[] = {{"assigned", g.assigned},
                               {"refused", g.refused},
                               {"unidentified", g.unidentified},
                               {"error", g.errors}};
    by_label(out, "vgpu_allocate_checks_total",
             "Allocates checked for the scheduler's placement, by outcome (refused: the pod "
             "was not placed by vgpu-scheduler, or its assignment is not signed by it).",
             node, "result", r, 4);
  }
}

static void print_agent(struct vg_textbuf *out, const struct scrape *s) {
  struct vg_textbuf l = {0};
  vg_prom_label(&l, "node", s->src->node);
  vg_prom_family(out, "vgpu_nvml_up", "gauge", "1 when NVML answered this scrape.");
  vg_prom_sample(out, "vgpu_nvml_up", &l, "%d", s->nvml_up ? 1 : 0);
  vg_prom_family(out, "vgpu_podresources_up", "gauge",
                 "1 when the kubelet's PodResources API answered.");
  vg_prom_sample(out, "vgpu_podresources_up", &l, "%d", s->podresources_up ? 1 : 0);
  vg_prom_family(out, "vgpu_stale_slots", "gauge",
                 "Slot directories on the host that no container the kubelet lists holds.");
  vg_prom_sample(out, "vgpu_stale_slots", &l, "%u", s->stale);
  print_agent_counters(out, s, &l);
  vg_textbuf_free(&l);
}

char *vg_metrics_render(const struct vg_metrics_sources *src, size_t *len) {
  struct scrape *s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->src = src;
  collect(s);
  struct vg_textbuf out = {0};
  print_gpus(&out, s, s->rows);
  print_containers(&out, s);
  print_agent(&out, s);
  for (unsigned i = 0; i < s->ngpus; i++) {
    if (s->rows[i].labels.oom) out.oom = true;
    vg_textbuf_free(&s->rows[i].labels);
  }
  free(s->ctrs);
  free(s);
  return vg_textbuf_take(&out, len);
}

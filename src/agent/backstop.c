/* backstop.c -- see backstop.h. */
#include "backstop.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "backstop_compute.h"
#include "deadline.h"
#include "grant.h"
#include "k8s.h"
#include "log.h"
#include "proc_slot.h"
#include "size.h"

#define MAX_USES 1024 /* containers x GPUs judged per pass */
#define PIDS_SHOWN 4

/* One container on one GPU in one pass. */
struct use {
  char slot[17];
  char uuid[VG_UUID_LEN];
  uint64_t nvml;
  unsigned procs;
  bool unknown; /* a process whose memory NVML did not give */
  uint32_t pids[PIDS_SHOWN];
  bool over, reported;
};

struct vg_backstop {
  char slots_dir[4096], proc_root[4096];
  struct vg_k8s_client *k8s;
  enum vg_backstop_policy policy;
  uint64_t tolerance, allowance;
  struct vg_compute *compute; /* the compute judgement (backstop_compute.h) */
  pthread_mutex_t lock;       /* uses, stats */
  struct use *uses;
  size_t nuses;
  struct vg_backstop_stats stats;
};

int vg_backstop_policy_parse(const char *text, enum vg_backstop_policy *p, struct vg_err *err) {
  if (strcmp(text, "report") == 0) return *p = VG_BACKSTOP_REPORT, 0;
  if (strcmp(text, "evict") == 0) return *p = VG_BACKSTOP_EVICT, 0;
  return vg_err_set(err, "backstop policy \"%s\": neither report nor evict", text);
}

bool vg_backstop_over(uint64_t nvml, unsigned procs, uint64_t grant, uint64_t context_allowance,
                      uint64_t tolerance) {
  if (grant == 0) return false; /* the whole GPU */
  /* Saturating: a grant or allowance near 2^64 must not wrap into "over". */
  uint64_t ctx = context_allowance != 0 && procs > UINT64_MAX / context_allowance
                     ? UINT64_MAX
                     : (uint64_t)procs * context_allowance;
  uint64_t allowed = grant > UINT64_MAX - tolerance ? UINT64_MAX : grant + tolerance;
  allowed = allowed > UINT64_MAX - ctx ? UINT64_MAX : allowed + ctx;
  return nvml > allowed;
}

/* The container of a process, for the compute judgement. */
static int slot_of(void *arg, uint32_t pid, char slot[17]) {
  const struct vg_backstop *b = arg;
  return vg_proc_slot(b->proc_root, (pid_t)pid, slot) == 1;
}

/* The container's grant on uuid, read from its slot (which only the agent
 * writes); false when it has none there. */
static bool load_grant(const struct vg_backstop *b, const char *slot, const char *uuid,
                       struct vg_grant_gpu *out) {
  char dir[sizeof(b->slots_dir) + 32];
  snprintf(dir, sizeof(dir), "%s/%s/grant", b->slots_dir, slot);
  struct vg_grant g;
  struct vg_err err;
  if (vg_grant_load(dir, &g, &err) != 0) return false;
  const struct vg_grant_gpu *e = vg_grant_find(&g, uuid);
  if (e != NULL) *out = *e;
  return e != NULL;
}

/* The compute grant, for the compute judgement: none is the whole GPU. */
static void grant_of(void *arg, const char *slot, const char *uuid, unsigned *cores, bool *share) {
  struct vg_grant_gpu g;
  bool found = load_grant(arg, slot, uuid, &g);
  *cores = found ? g.cores : 0;
  *share = found && g.policy == VG_SM_POLICY_SHARE;
}

struct vg_backstop *vg_backstop_new(const struct vg_backstop_opts *o, struct vg_err *err) {
  struct vg_backstop *b = calloc(1, sizeof(*b));
  if (b == NULL) return vg_err_set(err, "backstop: out of memory"), NULL;
  snprintf(b->slots_dir, sizeof(b->slots_dir), "%s", o->slots_dir);
  snprintf(b->proc_root, sizeof(b->proc_root), "%s", o->proc_root ? o->proc_root : "/proc");
  b->k8s = o->k8s;
  b->policy = o->policy;
  b->tolerance = o->tolerance;
  b->allowance = o->context_allowance;
  struct vg_compute_opts co = {
      o->compute_tolerance, o->compute_sustain_s, o->compute_util, slot_of, grant_of, b};
  b->compute = vg_compute_new(&co);
  if (b->compute == NULL) return free(b), vg_err_set(err, "backstop: out of memory"), NULL;
  pthread_mutex_init(&b->lock, NULL);
  return b;
}

void vg_backstop_free(struct vg_backstop *b) {
  if (b == NULL) return;
  free(b->uses);
  vg_compute_free(b->compute);
  pthread_mutex_destroy(&b->lock);
  free(b);
}

static struct use *find(struct use *v, size_t n, const char *slot, const char *uuid) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].slot, slot) == 0 && strcmp(v[i].uuid, uuid) == 0) return &v[i];
  return NULL;
}

static struct use *use_of(struct use *v, size_t *n, const char *slot, const char *uuid) {
  struct use *u = find(v, *n, slot, uuid);
  if (u != NULL) return u;
  if (*n == MAX_USES) return NULL;
  u = &v[(*n)++];
  memset(u, 0, sizeof(*u));
  snprintf(u->slot, sizeof(u->slot), "%s", slot);
  snprintf(u->uuid, sizeof(u->uuid), "%s", uuid);
  return u;
}

/* NVML's processes on every GPU, summed per container (slot) and GPU. */
static size_t attribute(struct vg_backstop *b, const struct vg_gpu_usage *gpus, unsigned ngpus,
                        struct use *v) {
  size_t n = 0;
  struct vg_gpu_proc procs[VG_GPU_PROCS_MAX];
  for (unsigned g = 0; g < ngpus; g++) {
    unsigned np = 0;
    char err[256];
    if (vg_gpu_processes(g, procs, VG_GPU_PROCS_MAX, &np, err, sizeof(err)) != 0) {
      pthread_mutex_lock(&b->lock);
      b->stats.errors++;
      pthread_mutex_unlock(&b->lock);
      continue;
    }
    for (unsigned k = 0; k < np; k++) {
      char slot[17];
      if (vg_proc_slot(b->proc_root, (pid_t)procs[k].pid, slot) != 1) continue; /* not ours */
      struct use *u = use_of(v, &n, slot, gpus[g].uuid);
      if (u == NULL) continue;
      if (u->procs < PIDS_SHOWN) u->pids[u->procs] = procs[k].pid;
      u->procs++;
      u->nvml += procs[k].memory;
      u->unknown |= !procs[k].known;
    }
  }
  return n;
}

static const struct vg_backstop_ctr *ctr_of(const struct vg_backstop_ctr *c, size_t n,
                                            const char *slot) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(c[i].slot, slot) == 0) return &c[i];
  return NULL;
}

/* The grant's memory for the container on uuid; 0 when none applies. */
static uint64_t granted(const struct vg_backstop *b, const struct use *u) {
  struct vg_grant_gpu g;
  return load_grant(b, u->slot, u->uuid, &g) ? g.memory : 0;
}

/* The first PIDS_SHOWN of procs host PIDs, " ..." when there are more. */
static void pids_text(const uint32_t *pids, unsigned procs, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = '\0';
  for (unsigned i = 0; i < procs && i < PIDS_SHOWN && off < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%u", i ? " " : "", pids[i]);
  if (procs > PIDS_SHOWN && off < len) snprintf(buf + off, len - off, " ...");
}

static const char *evict_note(const struct vg_backstop *b) {
  return b->policy == VG_BACKSTOP_EVICT ? "; evicting the pod (backstop policy evict)" : "";
}

/* Logs msg, records it as a Warning Event `reason` and (policy evict)
 * evicts: outside the lock. */
static void act(struct vg_backstop *b, const struct vg_backstop_ctr *c, const char *reason,
                const char *msg) {
  vg_warn("backstop: pod %s/%s %s", c->ns, c->pod, msg);
  if (b->k8s == NULL) return;
  struct vg_err err = {""};
  if (vg_k8s_pod_event_named(b->k8s, c->ns, c->pod, "Warning", reason, msg, "vgpu-device-plugin",
                             &err) != 0)
    vg_warn("backstop: cannot record the event on %s/%s: %s", c->ns, c->pod, err.msg);
  if (b->policy != VG_BACKSTOP_EVICT) return;
  if (vg_k8s_evict_pod(b->k8s, c->ns, c->pod, &err) != 0) {
    vg_warn("backstop: cannot evict %s/%s: %s", c->ns, c->pod, err.msg);
    return;
  }
  pthread_mutex_lock(&b->lock);
  b->stats.evictions++;
  pthread_mutex_unlock(&b->lock);
}

static void report(struct vg_backstop *b, const struct use *u, const struct vg_backstop_ctr *c,
                   uint64_t grant) {
  char used[32], gr[32], pids[64], msg[1024];
  pids_text(u->pids, u->procs, pids, sizeof(pids));
  snprintf(msg, sizeof(msg),
           "container %s: its processes hold %s on GPU %s (NVML; %u process(es), host PID(s) "
           "%s), above its grant of %s: a process is using the GPU without libvgpu (a static "
           "binary, a bypassed preload, direct driver calls)%s",
           c->container, vg_format_size(u->nvml, used, sizeof(used)), u->uuid, u->procs, pids,
           vg_format_size(grant, gr, sizeof(gr)), evict_note(b));
  act(b, c, "GPUMemoryOverGrant", msg);
}

static void report_compute(struct vg_backstop *b, const struct vg_compute_finding *f,
                           const struct vg_backstop_ctr *c) {
  char pids[64], allowed[64] = "", msg[1024];
  pids_text(f->pids, f->procs, pids, sizeof(pids));
  if (f->allowed != f->grant) /* policy share: what the others left */
    snprintf(allowed, sizeof(allowed), ", or %u %% the others left,", f->allowed);
  snprintf(msg, sizeof(msg),
           "container %s: its processes used %u %% of GPU %s's compute (NVML's per-process "
           "utilisation; %u process(es), host PID(s) %s) for %u s, above its compute grant of "
           "%u %%%s by more than %u points: a process is running kernels without libvgpu (a "
           "static binary, a bypassed preload, direct driver calls)%s",
           c->container, f->measured, f->uuid, f->procs, pids, f->seconds, f->grant, allowed,
           f->tolerance, evict_note(b));
  act(b, c, "GPUComputeOverGrant", msg);
}

/* The compute judgement's pass, and the reports of what it found. */
static int compute_pass(struct vg_backstop *b, const struct vg_gpu_usage *gpus, unsigned ngpus,
                        const struct vg_backstop_ctr *ctrs, size_t nctrs) {
  const char **slots = calloc(nctrs ? nctrs : 1, sizeof(*slots));
  struct vg_compute_finding *f = calloc(MAX_USES, sizeof(*f));
  size_t nf = 0;
  if (slots != NULL && f != NULL) {
    for (size_t i = 0; i < nctrs; i++) slots[i] = ctrs[i].slot;
    nf = vg_compute_pass(b->compute, gpus, ngpus, slots, nctrs, vg_monotonic_ms(), f, MAX_USES);
  }
  pthread_mutex_lock(&b->lock);
  b->stats.compute_detections += nf;
  pthread_mutex_unlock(&b->lock);
  for (size_t i = 0; i < nf; i++) report_compute(b, &f[i], ctr_of(ctrs, nctrs, f[i].slot));
  free(slots);
  free(f);
  return (int)nf;
}

int vg_backstop_pass(struct vg_backstop *b, const struct vg_gpu_usage *gpus, unsigned ngpus,
                     const struct vg_backstop_ctr *ctrs, size_t nctrs) {
  compute_pass(b, gpus, ngpus, ctrs, nctrs);
  struct use *v = calloc(MAX_USES, sizeof(*v));
  if (v == NULL) return 0;
  size_t n = attribute(b, gpus, ngpus, v);
  uint64_t grant[MAX_USES];
  for (size_t i = 0; i < n; i++) {
    grant[i] = granted(b, &v[i]);
    v[i].over = !v[i].unknown && ctr_of(ctrs, nctrs, v[i].slot) != NULL &&
                vg_backstop_over(v[i].nvml, v[i].procs, grant[i], b->allowance, b->tolerance);
  }
  bool fresh[MAX_USES] = {false};
  int over = 0;
  pthread_mutex_lock(&b->lock);
  for (size_t i = 0; i < n; i++) {
    if (!v[i].over) continue;
    over++;
    const struct use *was = find(b->uses, b->nuses, v[i].slot, v[i].uuid);
    v[i].reported = was != NULL && was->over && was->reported; /* the same episode */
    fresh[i] = !v[i].reported;
    v[i].reported = true;
    b->stats.detections += fresh[i];
  }
  free(b->uses); /* passes run one at a time (the audit's ticker), so v lives on below */
  b->uses = v, b->nuses = n;
  pthread_mutex_unlock(&b->lock);
  for (size_t i = 0; i < n; i++)
    if (fresh[i]) report(b, &v[i], ctr_of(ctrs, nctrs, v[i].slot), grant[i]);
  return over;
}

bool vg_backstop_reading(struct vg_backstop *b, const char *slot, const char *uuid, uint64_t *nvml,
                         bool *over) {
  bool found = false;
  pthread_mutex_lock(&b->lock);
  for (size_t i = 0; i < b->nuses && !found; i++)
    if (strcmp(b->uses[i].slot, slot) == 0 && strcmp(b->uses[i].uuid, uuid) == 0) {
      *nvml = b->uses[i].nvml;
      *over = b->uses[i].over;
      found = true;
    }
  pthread_mutex_unlock(&b->lock);
  return found;
}

struct vg_compute *vg_backstop_compute(struct vg_backstop *b) {
  return b->compute;
}

void vg_backstop_get_stats(struct vg_backstop *b, struct vg_backstop_stats *st) {
  pthread_mutex_lock(&b->lock);
  *st = b->stats;
  pthread_mutex_unlock(&b->lock);
}

/* plugin.c -- see plugin.h. */
#include "plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device_id.h"
#include "deviceplugin.pb-c.h"
#include "grant.h"
#include "log.h"
#include "region.h"
#include "slot.h"
#include "slot_dir.h"

static void pdebug(const struct vg_plugin *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void pdebug(const struct vg_plugin *p, const char *fmt, ...) {
  if (!p->debug) return;
  va_list ap;
  va_start(ap, fmt);
  vg_logv(VG_LOG_DEBUG, fmt, ap);
  va_end(ap);
}

static void add_resource(struct vg_plugin *p, enum vg_dialect d, const char *name) {
  for (size_t i = 0; i < p->nres; i++)
    if (strcmp(p->res[i].name, name) == 0) return;
  if (p->nres >= VG_PLUGIN_MAX_RESOURCES) return;
  struct vg_resource *r = &p->res[p->nres++];
  r->plugin = p;
  r->dialect = d;
  snprintf(r->name, sizeof(r->name), "%s", name);
  snprintf(r->endpoint, sizeof(r->endpoint), "vgpu-%s.sock", name);
  for (char *q = r->endpoint; *q != '\0'; q++)
    if (*q == '/') *q = '_';
  pthread_mutex_init(&r->server_lock, NULL);
}

void vg_plugin_init(struct vg_plugin *p, const struct vg_plugin_opts *opts,
                    const struct vg_gpu *gpus, unsigned ngpus) {
  memset(p, 0, sizeof(*p));
  p->cfg = *opts->cfg;
  snprintf(p->state_dir, sizeof(p->state_dir), "%s",
           opts->state_dir != NULL ? opts->state_dir : p->cfg.state_dir);
  snprintf(p->library, sizeof(p->library), "%s",
           opts->library != NULL ? opts->library : p->cfg.library);
  snprintf(p->dev_root, sizeof(p->dev_root), "%s", opts->dev_root != NULL ? opts->dev_root : "");
  p->debug = opts->debug;
  pthread_mutex_init(&p->lock, NULL);
  pthread_rwlock_init(&p->slots_lock, NULL);
  memcpy(p->gpus, gpus, ngpus * sizeof(*gpus));
  p->ngpus = ngpus;
  /* The main resource of every enabled dialect, in a fixed order ... */
  if (p->cfg.vgpu.enabled) add_resource(p, VG_DIALECT_VGPU, p->cfg.vgpu.resource_count);
  if (p->cfg.gpushare.enabled) add_resource(p, VG_DIALECT_GPUSHARE, p->cfg.gpushare.resource);
  if (p->cfg.ts.enabled) add_resource(p, VG_DIALECT_TIMESLICING, p->cfg.ts.resource);
  if (p->cfg.cce.enabled) add_resource(p, VG_DIALECT_CCE, p->cfg.cce.resource_mem);
  /* ... and what the GPUs add (whole GPUs left out of a timeSlicing list). */
  for (unsigned g = 0; g < ngpus; g++) {
    struct vg_advertised adv[VG_ADVERTISED_MAX];
    int n = vg_dialect_advertise(&p->cfg, gpus[g].memory, gpus[g].index, adv);
    for (int i = 0; i < n; i++)
      if (adv[i].ids > 0) add_resource(p, adv[i].dialect, adv[i].name);
  }
}

void vg_plugin_destroy(struct vg_plugin *p) {
  for (size_t i = 0; i < p->nres; i++) pthread_mutex_destroy(&p->res[i].server_lock);
  pthread_rwlock_destroy(&p->slots_lock);
  pthread_mutex_destroy(&p->lock);
}

void vg_plugin_devices_changed(struct vg_plugin *p) {
  for (size_t i = 0; i < p->nres; i++) {
    struct vg_resource *r = &p->res[i];
    pthread_mutex_lock(&r->server_lock);
    if (r->server != NULL) vg_rpc_server_notify(r->server);
    pthread_mutex_unlock(&r->server_lock);
  }
}

void vg_plugin_set_gpus(struct vg_plugin *p, const struct vg_gpu *gpus, unsigned ngpus) {
  pthread_mutex_lock(&p->lock);
  memcpy(p->gpus, gpus, ngpus * sizeof(*gpus));
  p->ngpus = ngpus;
  pthread_mutex_unlock(&p->lock);
  vg_plugin_devices_changed(p);
}

void vg_plugin_set_preference_source(struct vg_plugin *p, vg_plugin_prefer_fn fn, void *arg) {
  pthread_mutex_lock(&p->lock);
  p->prefer = fn;
  p->prefer_arg = arg;
  pthread_mutex_unlock(&p->lock);
}

void vg_plugin_set_admission_check(struct vg_plugin *p, vg_plugin_admit_fn fn, void *arg) {
  pthread_mutex_lock(&p->lock);
  p->admit = fn;
  p->admit_arg = arg;
  pthread_mutex_unlock(&p->lock);
}

void vg_plugin_set_allocate_observer(struct vg_plugin *p, void (*fn)(void *arg), void *arg) {
  pthread_mutex_lock(&p->lock);
  p->observer = fn;
  p->observer_arg = arg;
  pthread_mutex_unlock(&p->lock);
}

int vg_plugin_slot_path(const char *const *ids, size_t n, char *out, size_t len) {
  char name[17];
  if (vg_slot_name(ids, n, name) != 0) return -1;
  int w = snprintf(out, len, "slots/%s", name);
  return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* Device IDs GPU g contributes to resource r; *base is the first ID's
 * number. The numbers of all resources of one GPU follow each other (vgpu,
 * gpushare, timeSlicing, cce), so that no two resources share an ID string,
 * nor therefore a slot directory. */
static uint64_t ids_for(const struct vg_plugin *p, const struct vg_resource *r,
                        const struct vg_gpu *g, uint64_t *base) {
  struct vg_advertised adv[VG_ADVERTISED_MAX];
  int n = vg_dialect_advertise(&p->cfg, g->memory, g->index, adv);
  uint64_t first = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(adv[i].name, r->name) == 0) {
      if (base != NULL) *base = first;
      return adv[i].ids;
    }
    first += adv[i].ids;
  }
  return 0;
}

/* Index in gpus[0..ngpus) of the GPU that device ID id of resource r names,
 * -1 if none. */
static int gpu_of(const struct vg_resource *r, const struct vg_gpu *gpus, unsigned ngpus,
                  const char *id) {
  size_t ulen;
  uint64_t n;
  if (!vg_device_id_parse(id, &ulen, &n)) return -1;
  for (unsigned i = 0; i < ngpus; i++)
    if (strlen(gpus[i].uuid) == ulen && strncmp(gpus[i].uuid, id, ulen) == 0) {
      uint64_t base = 0, count = ids_for(r->plugin, r, &gpus[i], &base);
      return n >= base && n - base < count ? (int)i : -1;
    }
  return -1;
}

/* ---- methods ---- */

static grpc_status_code get_options(void *ctx, const ProtobufCMessage *req, struct vg_arena *a,
                                    ProtobufCMessage **resp, char *detail, size_t len) {
  (void)ctx, (void)req, (void)detail, (void)len;
  V1beta1__DevicePluginOptions *o = vg_arena_alloc(a, sizeof(*o));
  v1beta1__device_plugin_options__init(o);
  o->pre_start_required = 0;
  o->get_preferred_allocation_available = 1;
  *resp = &o->base;
  return GRPC_STATUS_OK;
}

static ProtobufCMessage *list_snapshot(void *ctx, struct vg_arena *a) {
  struct vg_resource *res = ctx;
  struct vg_plugin *p = res->plugin;
  V1beta1__ListAndWatchResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__list_and_watch_response__init(r);
  pthread_mutex_lock(&p->lock);
  uint64_t per[VG_MAX_GPUS], base[VG_MAX_GPUS], n = 0;
  for (unsigned g = 0; g < p->ngpus; g++) n += per[g] = ids_for(p, res, &p->gpus[g], &base[g]);
  r->devices = vg_arena_alloc(a, (n > 0 ? n : 1) * sizeof(*r->devices));
  for (unsigned g = 0; g < p->ngpus; g++) {
    const struct vg_gpu *gpu = &p->gpus[g];
    V1beta1__TopologyInfo *t = NULL;
    if (gpu->numa_node >= 0) {
      t = vg_arena_alloc(a, sizeof(*t));
      v1beta1__topology_info__init(t);
      V1beta1__NUMANode *node = vg_arena_alloc(a, sizeof(*node));
      v1beta1__numanode__init(node);
      node->id = gpu->numa_node;
      t->n_nodes = 1;
      t->nodes = vg_arena_alloc(a, sizeof(*t->nodes));
      t->nodes[0] = node;
    }
    for (uint64_t s = 0; s < per[g]; s++) {
      V1beta1__Device *d = vg_arena_alloc(a, sizeof(*d));
      v1beta1__device__init(d);
      char id[160]; /* a 96-byte UUID and 20 digits always fit */
      vg_device_id_format(id, sizeof(id), gpu->uuid, base[g] + s);
      d->id = vg_arena_strdup(a, id);
      d->health = gpu->healthy ? "Healthy" : "Unhealthy";
      d->topology = t;
      r->devices[r->n_devices++] = d;
    }
  }
  pthread_mutex_unlock(&p->lock);
  return &r->base;
}

static bool contains(char **ids, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ids[i], id) == 0) return true;
  return false;
}

/* A container's IDs of this dialect must all be on one GPU. */
static bool one_gpu_dialect(const struct vg_resource *r) {
  return r->dialect == VG_DIALECT_GPUSHARE || r->dialect == VG_DIALECT_CCE;
}

/* The plugin's own preference, when the scheduler's assignment does not
 * decide (steer.h): the must-include IDs, then
 *  - memory dialects (gpushare, cce): IDs of one GPU, the one with the fewest
 *    available IDs that still has enough (best fit: keep big holes whole);
 *  - count dialects (vgpu, timeSlicing): one ID on each GPU not used yet (a
 *    container asking for several wants several GPUs), busiest GPU first;
 * then any remaining IDs in order. p->lock held. */
static void prefer_locally(struct vg_resource *res,
                           const V1beta1__ContainerPreferredAllocationRequest *cr,
                           struct vg_arena *a, V1beta1__ContainerPreferredAllocationResponse *out) {
  struct vg_plugin *p = res->plugin;
  size_t want = (size_t)cr->allocation_size;
  bool used[VG_MAX_GPUS] = {false};
  size_t avail[VG_MAX_GPUS] = {0};
  int *gpu = vg_arena_alloc(a, (cr->n_available_deviceids + 1) * sizeof(int));
  for (size_t i = 0; i < cr->n_available_deviceids; i++) {
    gpu[i] = gpu_of(res, p->gpus, p->ngpus, cr->available_deviceids[i]);
    if (gpu[i] >= 0) avail[gpu[i]]++;
  }
  int first = -1;
  for (size_t i = 0; i < cr->n_must_include_deviceids && out->n_deviceids < want; i++) {
    out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, cr->must_include_deviceids[i]);
    int g = gpu_of(res, p->gpus, p->ngpus, cr->must_include_deviceids[i]);
    if (g >= 0) used[g] = true;
    if (first < 0) first = g;
  }
  size_t must = out->n_deviceids;
  if (one_gpu_dialect(res)) {
    int best = first;
    if (best < 0) {
      for (unsigned g = 0; g < p->ngpus; g++) {
        if (avail[g] == 0) continue;
        bool fits = avail[g] >= want, best_fits = best >= 0 && avail[best] >= want;
        if (best < 0 || (fits && !best_fits) ||
            (fits == best_fits && (fits ? avail[g] < avail[best] : avail[g] > avail[best])))
          best = (int)g;
      }
    }
    for (size_t i = 0; best >= 0 && i < cr->n_available_deviceids && out->n_deviceids < want; i++) {
      const char *id = cr->available_deviceids[i];
      if (gpu[i] == best && !contains(out->deviceids, must, id))
        out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, id);
    }
  } else {
    while (out->n_deviceids < want) {
      int best = -1;
      for (unsigned g = 0; g < p->ngpus; g++)
        if (!used[g] && avail[g] > 0 && (best < 0 || avail[g] < avail[best])) best = (int)g;
      if (best < 0) break;
      used[best] = true;
      for (size_t i = 0; i < cr->n_available_deviceids; i++) {
        const char *id = cr->available_deviceids[i];
        if (gpu[i] == best && !contains(out->deviceids, out->n_deviceids, id)) {
          out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, id);
          break;
        }
      }
    }
  }
  for (size_t i = 0; i < cr->n_available_deviceids && out->n_deviceids < want; i++) {
    const char *id = cr->available_deviceids[i];
    if (!contains(out->deviceids, out->n_deviceids, id))
      out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, id);
  }
}

/* The scheduler's assignment first (outside the plugin's lock: it asks the
 * kubelet and the API server), then the local rule. */
static grpc_status_code preferred(void *ctx, const ProtobufCMessage *req, struct vg_arena *a,
                                  ProtobufCMessage **resp, char *detail, size_t len) {
  struct vg_resource *res = ctx;
  struct vg_plugin *p = res->plugin;
  const V1beta1__PreferredAllocationRequest *rq = (const void *)req;
  V1beta1__PreferredAllocationResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__preferred_allocation_response__init(r);
  r->container_responses =
      vg_arena_alloc(a, (rq->n_container_requests + 1) * sizeof(*r->container_responses));
  pthread_mutex_lock(&p->lock);
  vg_plugin_prefer_fn steer = p->prefer;
  void *steer_arg = p->prefer_arg;
  pthread_mutex_unlock(&p->lock);
  for (size_t c = 0; c < rq->n_container_requests; c++) {
    const V1beta1__ContainerPreferredAllocationRequest *cr = rq->container_requests[c];
    if (cr->allocation_size < 0) {
      snprintf(detail, len, "GetPreferredAllocation: negative allocation_size %d",
               (int)cr->allocation_size);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
    size_t want = (size_t)cr->allocation_size;
    V1beta1__ContainerPreferredAllocationResponse *out = vg_arena_alloc(a, sizeof(*out));
    v1beta1__container_preferred_allocation_response__init(out);
    out->deviceids = vg_arena_alloc(a, (want + 1) * sizeof(char *));
    struct vg_steer_request sr = {res->name,
                                  one_gpu_dialect(res),
                                  (const char *const *)cr->available_deviceids,
                                  cr->n_available_deviceids,
                                  (const char *const *)cr->must_include_deviceids,
                                  cr->n_must_include_deviceids,
                                  want};
    const char **steered = vg_arena_alloc(a, (want + 1) * sizeof(char *));
    if (steer != NULL && want > 0 && steer(steer_arg, &sr, steered) == want) {
      for (size_t i = 0; i < want; i++) out->deviceids[i] = vg_arena_strdup(a, steered[i]);
      out->n_deviceids = want;
    } else {
      pthread_mutex_lock(&p->lock);
      prefer_locally(res, cr, a, out);
      pthread_mutex_unlock(&p->lock);
    }
    r->container_responses[r->n_container_responses++] = out;
  }
  *resp = &r->base;
  return GRPC_STATUS_OK;
}

static int mkdir_p(const char *path, char *err, size_t len) {
  char buf[VG_CONFIG_PATH_MAX + 100];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *s = buf + 1; *s != '\0'; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
      snprintf(err, len, "cannot create %s: %s", buf, strerror(errno));
      return -1;
    }
    *s = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    snprintf(err, len, "cannot create %s: %s", buf, strerror(errno));
    return -1;
  }
  return 0;
}

/* <stateDir>/ld.so.preload naming libvgpu.so inside the container; written
 * (atomically) when missing or different. */
static int ensure_preload(const struct vg_plugin *p, char *path, size_t path_len, char *err,
                          size_t len) {
  static const char want[] = VG_CONTAINER_DIR "/libvgpu.so\n";
  snprintf(path, path_len, "%s/ld.so.preload", p->state_dir);
  char have[sizeof(want) + 1] = "";
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    size_t n = fread(have, 1, sizeof(have) - 1, f);
    have[n] = '\0';
    fclose(f);
    if (strcmp(have, want) == 0) return 0;
  }
  char tmp[4200];
  /* A name of its own per call: concurrent Allocates each rename theirs. */
  static unsigned long seq;
  snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%lu", path, (long)getpid(),
           __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
  f = fopen(tmp, "w");
  if (f == NULL) {
    snprintf(err, len, "cannot write %s: %s", path, strerror(errno));
    return -1;
  }
  /* The FILE is closed on every path, a failed fputs included. */
  bool ok = fputs(want, f) >= 0;
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    snprintf(err, len, "cannot write %s: %s", path, strerror(saved));
    unlink(tmp);
    return -1;
  }
  return 0;
}

static void add_env(struct vg_arena *a, V1beta1__ContainerAllocateResponse *r, const char *k,
                    const char *v) {
  V1beta1__ContainerAllocateResponse__EnvsEntry *e = vg_arena_alloc(a, sizeof(*e));
  v1beta1__container_allocate_response__envs_entry__init(e);
  e->key = vg_arena_strdup(a, k);
  e->value = vg_arena_strdup(a, v);
  r->envs[r->n_envs++] = e;
}

static void add_mount(struct vg_arena *a, V1beta1__ContainerAllocateResponse *r, const char *host,
                      const char *container, bool ro) {
  V1beta1__Mount *m = vg_arena_alloc(a, sizeof(*m));
  v1beta1__mount__init(m);
  m->host_path = vg_arena_strdup(a, host);
  m->container_path = vg_arena_strdup(a, container);
  m->read_only = ro;
  r->mounts[r->n_mounts++] = m;
}

/* A device node, if the host has it (the simulated GPU has none). */
static void add_device(const struct vg_plugin *p, struct vg_arena *a,
                       V1beta1__ContainerAllocateResponse *r, const char *node) {
  char host[VG_CONFIG_PATH_MAX + 64];
  snprintf(host, sizeof(host), "%s%s", p->dev_root, node);
  struct stat st;
  if (stat(host, &st) != 0) {
    pdebug(p, "device node %s: %s; not passed to the container", host, strerror(errno));
    return;
  }
  V1beta1__DeviceSpec *d = vg_arena_alloc(a, sizeof(*d));
  v1beta1__device_spec__init(d);
  d->host_path = vg_arena_strdup(a, host);
  d->container_path = vg_arena_strdup(a, node);
  d->permissions = "rw";
  r->devices[r->n_devices++] = d;
}

/* Creates the container's region file afresh: every GPU registered, the
 * limits the IDs decide written, the pending mark as the dialect says. The
 * region file is writable from inside the containers that had these IDs
 * before (and the whole slot was, before it was mounted read-only), so
 * whatever region.cache is there now (a forged lock, a file held under
 * flock, a link from an older slot) is replaced, never opened: the kubelet's
 * Allocate waits on nothing a tenant wrote. */
static int prepare_region(const struct vg_gpu *all, const char *slot_dir, const unsigned *gpus,
                          unsigned n, const struct vg_container_limits *lim, bool pending,
                          char *err, size_t len) {
  struct vg_shm shm;
  struct vg_err e;
  if (vg_region_create_slot(&shm, slot_dir, &e) != 0) {
    snprintf(err, len, "%s", e.msg);
    return -1;
  }
  int idx[VG_MAX_GPUS];
  int rc = 0;
  if (vg_region_lock(&shm) != 0) { /* a file nobody else has seen yet */
    snprintf(err, len, "%.*s: %s", 1024, shm.path, vg_shm_lock_strerror(shm.last_lock));
    vg_shm_close(&shm);
    return -1;
  }
  for (unsigned i = 0; i < n && rc == 0; i++) {
    idx[i] = vg_region_device_locked(&shm, all[gpus[i]].uuid, all[gpus[i]].memory);
    if (idx[i] < 0) {
      snprintf(err, len, "region file %.*s: no room for GPU %s", 1024, shm.path, all[gpus[i]].uuid);
      rc = -1;
    }
  }
  vg_region_unlock(&shm);
  for (unsigned i = 0; i < n && rc == 0; i++) {
    if (lim[i].memory == 0) continue;
    if (vg_region_set_mem_limit(&shm, idx[i], lim[i].memory, &e) != 0) {
      snprintf(err, len, "%s", e.msg);
      rc = -1;
    }
  }
  if (rc == 0) vg_region_set_pending(&shm, pending);
  vg_shm_close(&shm);
  return rc;
}

/* The grant directory of a slot (grant.h), mounted read-only in the
 * container. When the IDs decide every limit, the grant is written now;
 * when the binder writes them later, a grant left by an earlier container
 * of the same IDs is removed first, so that libvgpu waits for the new one. */
static int prepare_grant(const struct vg_gpu *all, const char *dir, const unsigned *gpus,
                         unsigned n, const struct vg_container_limits *lim, bool pending, char *err,
                         size_t len) {
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    snprintf(err, len, "cannot create %s: %s", dir, strerror(errno));
    return -1;
  }
  char file[VG_CONFIG_PATH_MAX + 120];
  snprintf(file, sizeof(file), "%s/%s", dir, VG_GRANT_FILE);
  if (pending) {
    if (unlink(file) == 0 || errno == ENOENT) return 0;
    snprintf(err, len, "cannot remove the old grant %s: %s", file, strerror(errno));
    return -1;
  }
  struct vg_grant g = {.count = n};
  for (unsigned i = 0; i < n; i++) {
    snprintf(g.gpu[i].uuid, sizeof(g.gpu[i].uuid), "%.95s", all[gpus[i]].uuid);
    g.gpu[i].memory = lim[i].memory;
  }
  struct vg_err e;
  if (vg_grant_write(dir, &g, &e) == 0) return 0;
  snprintf(err, len, "%s", e.msg);
  return -1;
}

/* The vgpu CLI, installed beside libvgpu.so on the host, is mounted at
 * /usr/local/vgpu/bin/vgpu so that `vgpu status` works in any image; a node
 * whose installer predates it simply has none (a missing host path would
 * fail the container's creation). True, with its path in cli, when there. */
static bool cli_path(const struct vg_plugin *p, char *cli, size_t len) {
  const char *slash = strrchr(p->library, '/');
  snprintf(cli, len, "%.*s/vgpu", slash ? (int)(slash - p->library) : 0, p->library);
  struct stat st;
  if (stat(cli, &st) == 0 && S_ISREG(st.st_mode)) return true;
  pdebug(p, "no vgpu CLI at %s: containers get none", cli);
  return false;
}

/* Aliyun's variables, with its meanings and in its unit (the configured
 * memoryUnit): the GPU's memory, the container's (its IDs), the GPU's index
 * on the node (NVML's, as the inventory and inspect number GPUs) and, when
 * the gate identified the pod, the pod's total over its containers. Without
 * the pod there is no true value, so ALIYUN_COM_GPU_MEM_POD is left out
 * rather than guessed (docs/walkthroughs/gpushare.md). */
static void add_gpushare_env(const struct vg_plugin *p, struct vg_arena *a,
                             V1beta1__ContainerAllocateResponse *r, const struct vg_gpu *gpu,
                             size_t ids, const struct vg_admit_pod *pod) {
  char v[32];
  snprintf(v, sizeof(v), "%llu", (unsigned long long)(gpu->memory / p->cfg.gpushare.unit));
  add_env(a, r, "ALIYUN_COM_GPU_MEM_DEV", v);
  snprintf(v, sizeof(v), "%zu", ids);
  add_env(a, r, "ALIYUN_COM_GPU_MEM_CONTAINER", v);
  snprintf(v, sizeof(v), "%u", gpu->index);
  add_env(a, r, "ALIYUN_COM_GPU_MEM_IDX", v);
  if (!pod->known) {
    pdebug(p, "gpushare: the pod is not identified; no ALIYUN_COM_GPU_MEM_POD");
    return;
  }
  snprintf(v, sizeof(v), "%llu", (unsigned long long)pod->total);
  add_env(a, r, "ALIYUN_COM_GPU_MEM_POD", v);
}

/* How many of the container's IDs fall on each GPU (per_gpu[g]), and which
 * GPUs these are (used[0..*nused), in the node's order). An unknown ID, or
 * none at all, is refused. */
static grpc_status_code ids_per_gpu(const struct vg_resource *res, const struct vg_gpu *gpus,
                                    unsigned ngpus, const V1beta1__ContainerAllocateRequest *c,
                                    uint64_t *per_gpu, unsigned *used, unsigned *nused,
                                    char *detail, size_t len) {
  if (c->n_devices_ids == 0) {
    snprintf(detail, len, "Allocate: a container request without device IDs");
    return GRPC_STATUS_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < c->n_devices_ids; i++) {
    int g = gpu_of(res, gpus, ngpus, c->devices_ids[i]);
    if (g < 0) {
      snprintf(detail, len, "Allocate: unknown device ID \"%s\" (resource %s)", c->devices_ids[i],
               res->name);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
    per_gpu[g]++;
  }
  *nused = 0;
  for (unsigned g = 0; g < ngpus; g++)
    if (per_gpu[g] > 0) used[(*nused)++] = g;
  return GRPC_STATUS_OK;
}

/* What the IDs decide, per GPU (lim[i] for GPU used[i]); requests larger
 * than the dialect allows, or spread over GPUs where it wants one, are
 * refused. */
static grpc_status_code ids_limits(const struct vg_resource *res, const struct vg_gpu *gpus,
                                   const V1beta1__ContainerAllocateRequest *c,
                                   const uint64_t *per_gpu, const unsigned *used, unsigned nused,
                                   struct vg_container_limits *lim, char *detail, size_t len) {
  const struct vg_plugin *p = res->plugin;
  struct vg_err e;
  struct vg_container_limits total;
  if (res->dialect == VG_DIALECT_VGPU || res->dialect == VG_DIALECT_TIMESLICING) {
    if (vg_dialect_container_limits(&p->cfg, res->name, c->n_devices_ids, gpus[used[0]].memory,
                                    &total, &e) != 0) {
      snprintf(detail, len, "Allocate: %s", e.msg);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
  }
  for (unsigned i = 0; i < nused; i++) {
    unsigned g = used[i];
    if (res->dialect == VG_DIALECT_VGPU && per_gpu[g] > 1) {
      snprintf(detail, len,
               "Allocate: %s: %llu IDs on GPU %s; each GPU a container requests must be a "
               "different GPU",
               res->name, (unsigned long long)per_gpu[g], gpus[g].uuid);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
    if (vg_dialect_container_limits(&p->cfg, res->name, per_gpu[g], gpus[g].memory, &lim[i], &e) !=
        0) {
      snprintf(detail, len, "Allocate: %s (GPU %s)", e.msg, gpus[g].uuid);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
  }
  if (one_gpu_dialect(res) && nused > 1) {
    snprintf(detail, len,
             "Allocate: %s: %zu IDs on %u GPUs; a container's %s memory must be on one GPU",
             res->name, c->n_devices_ids, nused, vg_dialect_name(res->dialect));
    return GRPC_STATUS_INVALID_ARGUMENT;
  }
  return GRPC_STATUS_OK;
}

/* What every container of the resource gets, isolated or not: its GPUs
 * (NVIDIA_VISIBLE_DEVICES, the UUIDs in visible) and the device nodes. Room
 * is made for the slot's variables and mounts added later. */
static V1beta1__ContainerAllocateResponse *device_response(const struct vg_plugin *p,
                                                           struct vg_arena *a,
                                                           const struct vg_gpu *gpus,
                                                           const unsigned *used, unsigned nused,
                                                           const char *visible) {
  V1beta1__ContainerAllocateResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__container_allocate_response__init(r);
  r->envs = vg_arena_alloc(a, (nused + 7) * sizeof(*r->envs));
  r->mounts = vg_arena_alloc(a, 7 * sizeof(*r->mounts));
  r->devices = vg_arena_alloc(a, (nused + 4) * sizeof(*r->devices));
  add_env(a, r, "NVIDIA_VISIBLE_DEVICES", visible);
  add_device(p, a, r, "/dev/nvidiactl");
  add_device(p, a, r, "/dev/nvidia-uvm");
  add_device(p, a, r, "/dev/nvidia-uvm-tools");
  for (unsigned i = 0; i < nused; i++) {
    if (gpus[used[i]].minor < 0) {
      pdebug(p, "GPU %s: NVML gives no minor number; no device node", gpus[used[i]].uuid);
      continue;
    }
    char node[64];
    snprintf(node, sizeof(node), "/dev/nvidia%d", gpus[used[i]].minor);
    add_device(p, a, r, node);
  }
  return r;
}

/* The host paths a container's slot is made of. */
struct slot_paths {
  char dir[VG_CONFIG_PATH_MAX + 80];
  char preload[VG_CONFIG_PATH_MAX + 32];
  char grant[VG_CONFIG_PATH_MAX + 100], region[VG_CONFIG_PATH_MAX + 100];
  char cli[VG_CONFIG_PATH_MAX + 8];
  bool has_cli;
};

/* The slot of the container's IDs under the state directory; preload is
 * filled when the slot is prepared. */
static void slot_paths_of(const struct vg_plugin *p, const V1beta1__ContainerAllocateRequest *c,
                          struct slot_paths *sp) {
  char rel[64];
  vg_plugin_slot_path((const char *const *)c->devices_ids, c->n_devices_ids, rel, sizeof(rel));
  snprintf(sp->dir, sizeof(sp->dir), "%s/%s", p->state_dir, rel);
  snprintf(sp->grant, sizeof(sp->grant), "%s/" VG_SLOT_GRANT, sp->dir);
  snprintf(sp->region, sizeof(sp->region), "%s/" VG_REGION_FILE, sp->dir);
  sp->has_cli = cli_path(p, sp->cli, sizeof(sp->cli));
}

/* The slot on the host: directory, ld.so.preload, mount points, grant and
 * region file. The stamp (the directory's mtime, also when the slot is
 * reused) tells the slot collector that the slot was just handed out: the
 * kubelet lists the container's IDs only once this call has returned.
 * 0, or -1 with the reason in err. */
static int prepare_slot(struct vg_plugin *p, const struct vg_gpu *gpus, const unsigned *used,
                        unsigned nused, const struct vg_container_limits *lim, bool pending,
                        struct slot_paths *sp, char *err, size_t len) {
  pthread_rwlock_rdlock(&p->slots_lock);
  int rc = mkdir_p(sp->dir, err, len);
  if (rc == 0) rc = ensure_preload(p, sp->preload, sizeof(sp->preload), err, len);
  if (rc == 0) rc = vg_slot_dir_prepare(sp->dir, sp->has_cli, err, len);
  if (rc == 0) rc = prepare_grant(gpus, sp->grant, used, nused, lim, pending, err, len);
  if (rc == 0) rc = prepare_region(gpus, sp->dir, used, nused, lim, pending, err, len);
  if (rc == 0 && (rc = utimensat(AT_FDCWD, sp->dir, NULL, 0)) != 0)
    snprintf(err, len, "cannot stamp %s: %s", sp->dir, strerror(errno));
  pthread_rwlock_unlock(&p->slots_lock);
  return rc;
}

/* CUDA_DEVICE_MEMORY_LIMIT_<i> for every GPU the IDs give a memory limit,
 * in MiB when whole. */
static void add_limit_env(struct vg_arena *a, V1beta1__ContainerAllocateResponse *r,
                          const struct vg_container_limits *lim, unsigned nused) {
  for (unsigned i = 0; i < nused; i++) {
    if (lim[i].memory == 0) continue;
    char k[64], v[32];
    snprintf(k, sizeof(k), "CUDA_DEVICE_MEMORY_LIMIT_%u", i);
    if (lim[i].memory % (1ULL << 20) == 0)
      snprintf(v, sizeof(v), "%llum", (unsigned long long)(lim[i].memory >> 20));
    else
      snprintf(v, sizeof(v), "%llu", (unsigned long long)lim[i].memory);
    add_env(a, r, k, v);
  }
}

/* The slot read-only: the container can create, remove or rename nothing
 * there (no junk for the next tenant of these IDs, no new files filling the
 * node's disk), and the mounts below, mount points made in the slot, can be
 * neither replaced nor removed (EBUSY). Parents before children: the
 * runtimes mount in order of depth (containerd and CRI-O sort by it), and
 * the kubelet keeps this order besides. */
static void add_slot_mounts(const struct vg_plugin *p, struct vg_arena *a,
                            V1beta1__ContainerAllocateResponse *r, const struct slot_paths *sp) {
  add_mount(a, r, sp->dir, VG_CONTAINER_DIR, true);
  /* The region file alone writable: every process charges memory there. */
  add_mount(a, r, sp->region, VG_CONTAINER_DIR "/" VG_REGION_FILE, false);
  add_mount(a, r, sp->grant, VG_GRANT_DIR, true);
  add_mount(a, r, p->library, VG_CONTAINER_DIR "/" VG_SLOT_LIBRARY, true);
  add_mount(a, r, sp->preload, "/etc/ld.so.preload", true);
  if (sp->has_cli) add_mount(a, r, sp->cli, VG_CONTAINER_DIR "/" VG_SLOT_CLI, true);
}

/* One container: everything from the device IDs alone (docs/allocation.md,
 * docs/device-plugin.md). gpus[0..ngpus) is the caller's copy of the GPU list:
 * no lock is held, so that Allocates of different pods run side by side.
 * Two Allocates of the same IDs at once are safe too: mkdir tolerates EEXIST,
 * each writes ld.so.preload through a temporary file of its own, a mount
 * point the other made first is checked again (slot_dir.c), and each
 * makes its region file under a name of its own and renames it in place. */
static grpc_status_code allocate_one(struct vg_resource *res, const struct vg_gpu *gpus,
                                     unsigned ngpus, const V1beta1__ContainerAllocateRequest *c,
                                     const struct vg_admit_pod *pod, struct vg_arena *a,
                                     V1beta1__ContainerAllocateResponse **out, char *detail,
                                     size_t len) {
  struct vg_plugin *p = res->plugin;
  uint64_t per_gpu[VG_MAX_GPUS] = {0};
  unsigned used[VG_MAX_GPUS] = {0}, nused = 0;
  struct vg_container_limits lim[VG_MAX_GPUS];
  grpc_status_code st = ids_per_gpu(res, gpus, ngpus, c, per_gpu, used, &nused, detail, len);
  if (st == GRPC_STATUS_OK) st = ids_limits(res, gpus, c, per_gpu, used, nused, lim, detail, len);
  if (st != GRPC_STATUS_OK) return st;
  bool pending = lim[0].pending;

  char visible[VG_MAX_GPUS * 100] = "";
  size_t off = 0;
  for (unsigned i = 0; i < nused; i++)
    off += (size_t)snprintf(visible + off, sizeof(visible) - off, "%s%s", i > 0 ? "," : "",
                            gpus[used[i]].uuid);
  V1beta1__ContainerAllocateResponse *r = device_response(p, a, gpus, used, nused, visible);
  if (lim[0].unlimited) { /* timeSlicing without isolation, as NVIDIA: access only */
    *out = r;
    return GRPC_STATUS_OK;
  }

  struct slot_paths sp;
  slot_paths_of(p, c, &sp);
  char err[VG_CONFIG_PATH_MAX * 3 + 600];
  if (prepare_slot(p, gpus, used, nused, lim, pending, &sp, err, sizeof(err)) != 0) {
    snprintf(detail, len, "Allocate: %s", err);
    return GRPC_STATUS_INTERNAL;
  }
  add_env(a, r, "CUDA_DEVICE_MEMORY_SHARED_CACHE", VG_CONTAINER_DIR "/region.cache");
  add_limit_env(a, r, lim, nused);
  if (res->dialect == VG_DIALECT_GPUSHARE)
    add_gpushare_env(p, a, r, &gpus[used[0]], c->n_devices_ids, pod);
  add_slot_mounts(p, a, r, &sp);
  pdebug(p, "Allocate %s: %s -> %s%s", res->name, visible, sp.dir, pending ? " (pending)" : "");
  *out = r;
  return GRPC_STATUS_OK;
}

static grpc_status_code allocate(void *ctx, const ProtobufCMessage *req, struct vg_arena *a,
                                 ProtobufCMessage **resp, char *detail, size_t len) {
  struct vg_resource *res = ctx;
  struct vg_plugin *p = res->plugin;
  const V1beta1__AllocateRequest *rq = (const void *)req;
  V1beta1__AllocateResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__allocate_response__init(r);
  r->container_responses =
      vg_arena_alloc(a, (rq->n_container_requests + 1) * sizeof(*r->container_responses));
  /* A copy of the GPU list; the file work below runs without the lock. */
  struct vg_gpu *gpus = malloc(sizeof(p->gpus));
  if (gpus == NULL) abort();
  pthread_mutex_lock(&p->lock);
  unsigned ngpus = p->ngpus;
  memcpy(gpus, p->gpus, ngpus * sizeof(*gpus));
  void (*fn)(void *) = p->observer;
  void *arg = p->observer_arg;
  vg_plugin_admit_fn admit = p->admit;
  void *admit_arg = p->admit_arg;
  pthread_mutex_unlock(&p->lock);
  for (size_t c = 0; c < rq->n_container_requests; c++) {
    V1beta1__ContainerAllocateResponse *one = NULL;
    grpc_status_code st = GRPC_STATUS_OK;
    struct vg_admit_pod pod = {false, 0};
    if (admit != NULL && admit(admit_arg, res->name, &pod, detail, len) != 0)
      st = GRPC_STATUS_FAILED_PRECONDITION; /* before any slot exists: nothing to undo */
    else
      st = allocate_one(res, gpus, ngpus, rq->container_requests[c], &pod, a, &one, detail, len);
    if (st != GRPC_STATUS_OK) {
      free(gpus);
      vg_info("%s", detail);
      return st;
    }
    r->container_responses[r->n_container_responses++] = one;
  }
  free(gpus);
  if (fn != NULL) fn(arg);
  *resp = &r->base;
  return GRPC_STATUS_OK;
}

static grpc_status_code pre_start(void *ctx, const ProtobufCMessage *req, struct vg_arena *a,
                                  ProtobufCMessage **resp, char *detail, size_t len) {
  (void)ctx, (void)req, (void)detail, (void)len;
  V1beta1__PreStartContainerResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__pre_start_container_response__init(r);
  *resp = &r->base;
  return GRPC_STATUS_OK;
}

const struct vg_rpc_method vg_plugin_methods[] = {
    {"/v1beta1.DevicePlugin/GetDevicePluginOptions", &v1beta1__empty__descriptor, get_options,
     NULL},
    {"/v1beta1.DevicePlugin/ListAndWatch", &v1beta1__empty__descriptor, NULL, list_snapshot},
    {"/v1beta1.DevicePlugin/GetPreferredAllocation",
     &v1beta1__preferred_allocation_request__descriptor, preferred, NULL},
    {"/v1beta1.DevicePlugin/Allocate", &v1beta1__allocate_request__descriptor, allocate, NULL},
    {"/v1beta1.DevicePlugin/PreStartContainer", &v1beta1__pre_start_container_request__descriptor,
     pre_start, NULL},
};
const size_t vg_plugin_nmethods = sizeof(vg_plugin_methods) / sizeof(vg_plugin_methods[0]);

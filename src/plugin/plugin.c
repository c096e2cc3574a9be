/* plugin.c -- see plugin.h. */
#include "plugin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "deviceplugin.pb-c.h"

void vg_plog(const char *fmt, ...) {
  char line[1024];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int n = snprintf(line, sizeof(line), "vgpu-device-plugin [%ld.%03ld]: ", (long)ts.tv_sec,
                   ts.tv_nsec / 1000000);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}

void vg_plugin_init(struct vg_plugin *p, const struct vg_plugin_opts *opts,
                    const struct vg_gpu *gpus, unsigned ngpus) {
  memset(p, 0, sizeof(*p));
  p->opts = *opts;
  pthread_mutex_init(&p->lock, NULL);
  pthread_mutex_init(&p->server_lock, NULL);
  memcpy(p->gpus, gpus, ngpus * sizeof(*gpus));
  p->ngpus = ngpus;
}

void vg_plugin_destroy(struct vg_plugin *p) {
  pthread_mutex_destroy(&p->lock);
  pthread_mutex_destroy(&p->server_lock);
}

void vg_plugin_devices_changed(struct vg_plugin *p) {
  pthread_mutex_lock(&p->server_lock);
  if (p->server != NULL) vg_rpc_server_notify(p->server);
  pthread_mutex_unlock(&p->server_lock);
}

void vg_plugin_set_gpus(struct vg_plugin *p, const struct vg_gpu *gpus, unsigned ngpus) {
  pthread_mutex_lock(&p->lock);
  memcpy(p->gpus, gpus, ngpus * sizeof(*gpus));
  p->ngpus = ngpus;
  pthread_mutex_unlock(&p->lock);
  vg_plugin_devices_changed(p);
}

/* Index of the GPU that device ID id names, -1 if none. With p->lock held. */
static int gpu_of(const struct vg_plugin *p, const char *id) {
  const char *sep = strstr(id, "::");
  if (sep == NULL) return -1;
  char *end;
  errno = 0;
  unsigned long slot = strtoul(sep + 2, &end, 10);
  if (sep[2] < '0' || sep[2] > '9' || *end != '\0' || errno != 0 || slot >= p->opts.slots)
    return -1;
  size_t ulen = (size_t)(sep - id);
  for (unsigned i = 0; i < p->ngpus; i++)
    if (strlen(p->gpus[i].uuid) == ulen && strncmp(p->gpus[i].uuid, id, ulen) == 0) return (int)i;
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
  struct vg_plugin *p = ctx;
  V1beta1__ListAndWatchResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__list_and_watch_response__init(r);
  pthread_mutex_lock(&p->lock);
  size_t n = (size_t)p->ngpus * p->opts.slots;
  r->devices = vg_arena_alloc(a, (n > 0 ? n : 1) * sizeof(*r->devices));
  for (unsigned g = 0; g < p->ngpus; g++) {
    const struct vg_gpu *gpu = &p->gpus[g];
    for (unsigned s = 0; s < p->opts.slots; s++) {
      V1beta1__Device *d = vg_arena_alloc(a, sizeof(*d));
      v1beta1__device__init(d);
      char id[160];
      snprintf(id, sizeof(id), "%s::%u", gpu->uuid, s);
      d->id = vg_arena_strdup(a, id);
      d->health = gpu->healthy ? "Healthy" : "Unhealthy";
      if (gpu->numa_node >= 0) {
        V1beta1__TopologyInfo *t = vg_arena_alloc(a, sizeof(*t));
        v1beta1__topology_info__init(t);
        V1beta1__NUMANode *node = vg_arena_alloc(a, sizeof(*node));
        v1beta1__numanode__init(node);
        node->id = gpu->numa_node;
        t->n_nodes = 1;
        t->nodes = vg_arena_alloc(a, sizeof(*t->nodes));
        t->nodes[0] = node;
        d->topology = t;
      }
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

/* Preference: the must-include IDs, then one ID on each GPU not used yet
 * (a container asking for several IDs wants several GPUs), taking the
 * busiest GPU first (fewest available IDs: pack shared GPUs, keep idle ones
 * whole), then any remaining IDs in order. */
static grpc_status_code preferred(void *ctx, const ProtobufCMessage *req, struct vg_arena *a,
                                  ProtobufCMessage **resp, char *detail, size_t len) {
  struct vg_plugin *p = ctx;
  const V1beta1__PreferredAllocationRequest *rq = (const void *)req;
  V1beta1__PreferredAllocationResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__preferred_allocation_response__init(r);
  r->container_responses =
      vg_arena_alloc(a, (rq->n_container_requests + 1) * sizeof(*r->container_responses));
  pthread_mutex_lock(&p->lock);
  for (size_t c = 0; c < rq->n_container_requests; c++) {
    const V1beta1__ContainerPreferredAllocationRequest *cr = rq->container_requests[c];
    if (cr->allocation_size < 0) {
      pthread_mutex_unlock(&p->lock);
      snprintf(detail, len, "GetPreferredAllocation: negative allocation_size %d",
               (int)cr->allocation_size);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
    size_t want = (size_t)cr->allocation_size;
    V1beta1__ContainerPreferredAllocationResponse *out = vg_arena_alloc(a, sizeof(*out));
    v1beta1__container_preferred_allocation_response__init(out);
    out->deviceids = vg_arena_alloc(a, (want + 1) * sizeof(char *));
    bool used[VG_MAX_GPUS] = {false};
    unsigned avail[VG_MAX_GPUS] = {0};
    for (size_t i = 0; i < cr->n_available_deviceids; i++) {
      int g = gpu_of(p, cr->available_deviceids[i]);
      if (g >= 0) avail[g]++;
    }
    for (size_t i = 0; i < cr->n_must_include_deviceids && out->n_deviceids < want; i++) {
      out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, cr->must_include_deviceids[i]);
      int g = gpu_of(p, cr->must_include_deviceids[i]);
      if (g >= 0) used[g] = true;
    }
    while (out->n_deviceids < want) {
      int best = -1;
      for (unsigned g = 0; g < p->ngpus; g++)
        if (!used[g] && avail[g] > 0 && (best < 0 || avail[g] < avail[best])) best = (int)g;
      if (best < 0) break;
      used[best] = true;
      for (size_t i = 0; i < cr->n_available_deviceids; i++) {
        const char *id = cr->available_deviceids[i];
        if (gpu_of(p, id) == best && !contains(out->deviceids, out->n_deviceids, id)) {
          out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, id);
          break;
        }
      }
    }
    for (size_t i = 0; i < cr->n_available_deviceids && out->n_deviceids < want; i++) {
      const char *id = cr->available_deviceids[i];
      if (!contains(out->deviceids, out->n_deviceids, id))
        out->deviceids[out->n_deviceids++] = vg_arena_strdup(a, id);
    }
    r->container_responses[r->n_container_responses++] = out;
  }
  pthread_mutex_unlock(&p->lock);
  *resp = &r->base;
  return GRPC_STATUS_OK;
}

static int cmp_str(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

static int mkdir_p(const char *path, char *err, size_t len) {
  char buf[4096];
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

/* One container: env and mounts from the device IDs alone (docs/allocation.md). */
static grpc_status_code allocate_one(struct vg_plugin *p,
                                     const V1beta1__ContainerAllocateRequest *c, struct vg_arena *a,
                                     V1beta1__ContainerAllocateResponse **out, char *detail,
                                     size_t len) {
  if (c->n_devices_ids == 0) {
    snprintf(detail, len, "Allocate: a container request without device IDs");
    return GRPC_STATUS_INVALID_ARGUMENT;
  }
  bool used[VG_MAX_GPUS] = {false};
  for (size_t i = 0; i < c->n_devices_ids; i++) {
    int g = gpu_of(p, c->devices_ids[i]);
    if (g < 0) {
      snprintf(detail, len, "Allocate: unknown device ID \"%s\" (resource %s)", c->devices_ids[i],
               p->opts.resource);
      return GRPC_STATUS_INVALID_ARGUMENT;
    }
    used[g] = true;
  }
  char visible[VG_MAX_GPUS * 100] = "";
  size_t off = 0;
  for (unsigned g = 0; g < p->ngpus; g++)
    if (used[g])
      off += (size_t)snprintf(visible + off, sizeof(visible) - off, "%s%s", off > 0 ? "," : "",
                              p->gpus[g].uuid);

  /* The slot directory is named after the sorted IDs (FNV-1a 64). */
  char **sorted = vg_arena_alloc(a, c->n_devices_ids * sizeof(char *));
  memcpy(sorted, c->devices_ids, c->n_devices_ids * sizeof(char *));
  qsort(sorted, c->n_devices_ids, sizeof(char *), cmp_str);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < c->n_devices_ids; i++) {
    for (const char *s = sorted[i]; *s != '\0'; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
  }
  char slot_dir[4096];
  snprintf(slot_dir, sizeof(slot_dir), "%s/slots/%016llx", p->opts.state_dir,
           (unsigned long long)h);
  char err[4200];
  if (mkdir_p(slot_dir, err, sizeof(err)) != 0) {
    snprintf(detail, len, "Allocate: %s", err);
    return GRPC_STATUS_INTERNAL;
  }

  V1beta1__ContainerAllocateResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__container_allocate_response__init(r);
  r->envs = vg_arena_alloc(a, 2 * sizeof(*r->envs));
  add_env(a, r, "NVIDIA_VISIBLE_DEVICES", visible);
  add_env(a, r, "CUDA_DEVICE_MEMORY_SHARED_CACHE", VG_CONTAINER_DIR "/region.cache");
  r->mounts = vg_arena_alloc(a, 2 * sizeof(*r->mounts));
  add_mount(a, r, slot_dir, VG_CONTAINER_DIR, false);
  add_mount(a, r, p->opts.library, VG_CONTAINER_DIR "/libvgpu.so", true);
  *out = r;
  return GRPC_STATUS_OK;
}

static grpc_status_code allocate(void *ctx, const ProtobufCMessage *req, struct vg_arena *a,
                                 ProtobufCMessage **resp, char *detail, size_t len) {
  struct vg_plugin *p = ctx;
  const V1beta1__AllocateRequest *rq = (const void *)req;
  V1beta1__AllocateResponse *r = vg_arena_alloc(a, sizeof(*r));
  v1beta1__allocate_response__init(r);
  r->container_responses =
      vg_arena_alloc(a, (rq->n_container_requests + 1) * sizeof(*r->container_responses));
  pthread_mutex_lock(&p->lock);
  for (size_t c = 0; c < rq->n_container_requests; c++) {
    V1beta1__ContainerAllocateResponse *one = NULL;
    grpc_status_code st = allocate_one(p, rq->container_requests[c], a, &one, detail, len);
    if (st != GRPC_STATUS_OK) {
      pthread_mutex_unlock(&p->lock);
      vg_plog("%s", detail);
      return st;
    }
    r->container_responses[r->n_container_responses++] = one;
  }
  pthread_mutex_unlock(&p->lock);
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

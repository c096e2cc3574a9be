/*
 * plugin.h -- the DevicePlugin services of vgpu-device-plugin.
 *
 * One struct vg_plugin holds the node's configuration (config.h) and GPUs;
 * it serves one DevicePlugin socket per resource the configuration
 * advertises (dialect.h), each with device IDs <GPU-UUID>::<n>. Allocate is a
 * local computation from the IDs (docs/allocation.md, docs/device-plugin.md).
 */
#ifndef VG_PLUGIN_H
#define VG_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "devices.h"
#include "advertise.h"
#include "grpc_server.h"
#include "steer.h"

#define VG_CONTAINER_DIR "/usr/local/vgpu"
/* Most resources one node serves (vgpu, gpushare, timeSlicing + whole GPUs, cce). */
#define VG_PLUGIN_MAX_RESOURCES VG_ADVERTISED_MAX

struct vg_plugin_opts {
  const struct vg_plugin_config *cfg; /* copied by vg_plugin_init */
  const char *state_dir;              /* NULL: cfg->state_dir */
  const char *library;                /* NULL: cfg->library */
  const char *dev_root;               /* prefix of host device paths ("" normally; tests) */
  bool debug;                         /* log debug lines */
};

struct vg_plugin;

/* A source of GetPreferredAllocation answers (steer.h): rq->size IDs written
 * to out, or 0 for no opinion. Called on gRPC worker threads, without locks. */
typedef size_t (*vg_plugin_prefer_fn)(void *arg, const struct vg_steer_request *rq,
                                      const char **out);

/* What an admission check learnt of the pod whose container is allocated:
 * the sum of the resource over the pod's containers (their limits, else
 * requests), when it identified the pod. gpushare's ALIYUN_COM_GPU_MEM_POD. */
struct vg_admit_pod {
  bool known;
  uint64_t total;
};

/* A check before a container's Allocate of IDs of resource (gate.h): 0 to
 * go on (pod filled in, known false when the check could not tell), non-zero
 * to refuse it with the reason in why. Called on gRPC worker threads,
 * without locks. */
typedef int (*vg_plugin_admit_fn)(void *arg, const char *resource, struct vg_admit_pod *pod,
                                  char *why, size_t len);

/* One kubelet resource: its own socket, registration and ListAndWatch. */
struct vg_resource {
  struct vg_plugin *plugin;
  enum vg_dialect dialect;
  char name[VG_RESOURCE_NAME_MAX];
  char endpoint[VG_RESOURCE_NAME_MAX + 16]; /* socket file name in the plugin dir */
  pthread_mutex_t server_lock;              /* server */
  struct vg_rpc_server *server;
};

struct vg_plugin {
  struct vg_plugin_config cfg;
  char state_dir[VG_CONFIG_PATH_MAX];
  char library[VG_CONFIG_PATH_MAX];
  char dev_root[VG_CONFIG_PATH_MAX];
  bool debug;
  pthread_mutex_t lock; /* gpus, observer, prefer, admit */
  struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus;
  struct vg_resource res[VG_PLUGIN_MAX_RESOURCES];
  size_t nres;
  void (*observer)(void *arg);
  void *observer_arg;
  vg_plugin_prefer_fn prefer;
  void *prefer_arg;
  vg_plugin_admit_fn admit;
  void *admit_arg;
  /* Allocates hold it for reading while they create or reuse a slot
   * directory; the slot collector (slot_gc.h) for writing while it removes
   * one, so that it never removes a slot an Allocate is handing out. */
  pthread_rwlock_t slots_lock;
};

extern const struct vg_rpc_method vg_plugin_methods[];
extern const size_t vg_plugin_nmethods;

/* Sets up the resources the configuration advertises for these GPUs (the
 * main resource of every enabled dialect, plus `nvidia.com/gpu` for GPUs a
 * timeSlicing `devices:` list leaves out). The gRPC ctx of a resource's
 * server is its struct vg_resource. */
void vg_plugin_init(struct vg_plugin *p, const struct vg_plugin_opts *opts,
                    const struct vg_gpu *gpus, unsigned ngpus);
void vg_plugin_destroy(struct vg_plugin *p);
/* Replaces the GPU list and tells every ListAndWatch stream of every resource. */
void vg_plugin_set_gpus(struct vg_plugin *p, const struct vg_gpu *gpus, unsigned ngpus);
/* Every ListAndWatch stream sends the full device list again. */
void vg_plugin_devices_changed(struct vg_plugin *p);

/* For the binder (docs/allocation.md step 2). Writes the slot directory of a
 * container that received device IDs ids[0..n), *relative to the state
 * directory*: "slots/<16 hex digits>" (FNV-1a 64 over the sorted IDs, each
 * followed by '\n'; the order of ids does not matter). The host path is
 * <stateDir>/<out>; its region file is <stateDir>/<out>/region.cache.
 * Returns 0, or -1 when n is 0 or out is too small. */
int vg_plugin_slot_path(const char *const *ids, size_t n, char *out, size_t len);

/* fn(arg) is called after every successful Allocate (outside the plugin's
 * locks, on a gRPC thread; keep it short: the binder uses it to wake up).
 * NULL removes it. */
void vg_plugin_set_allocate_observer(struct vg_plugin *p, void (*fn)(void *arg), void *arg);

/* fn answers GetPreferredAllocation first (the scheduler's assignment);
 * when it has no opinion the plugin's own rule applies. NULL removes it. */
void vg_plugin_set_preference_source(struct vg_plugin *p, vg_plugin_prefer_fn fn, void *arg);

/* fn decides, before anything is created, whether a container's Allocate
 * may go on (refused: FAILED_PRECONDITION with fn's reason, which the
 * kubelet puts in the pod's admission error). NULL removes it. */
void vg_plugin_set_admission_check(struct vg_plugin *p, vg_plugin_admit_fn fn, void *arg);

#endif

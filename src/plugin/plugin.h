/*
 * plugin.h -- the DevicePlugin service of vgpu-device-plugin: the advertised
 * device IDs (<GPU-UUID>::<slot>) and the handlers of the v1beta1 methods.
 */
#ifndef VG_PLUGIN_H
#define VG_PLUGIN_H

#include <pthread.h>
#include <stddef.h>

#include "devices.h"
#include "grpc_server.h"

#define VG_DEFAULT_LIBRARY "/usr/local/vgpu/libvgpu.so"
#define VG_CONTAINER_DIR "/usr/local/vgpu"

struct vg_plugin_opts {
  const char *resource;  /* e.g. "nvidia.com/gpu" */
  unsigned slots;        /* device IDs per GPU */
  const char *state_dir; /* host dir holding slots/<hash> */
  const char *library;   /* host path of libvgpu.so */
};

struct vg_plugin {
  struct vg_plugin_opts opts;
  pthread_mutex_t lock; /* gpus */
  struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus;
  pthread_mutex_t server_lock; /* server */
  struct vg_rpc_server *server;
};

extern const struct vg_rpc_method vg_plugin_methods[];
extern const size_t vg_plugin_nmethods;

void vg_plugin_init(struct vg_plugin *p, const struct vg_plugin_opts *opts,
                    const struct vg_gpu *gpus, unsigned ngpus);
void vg_plugin_destroy(struct vg_plugin *p);
/* Replaces the GPU list and tells every ListAndWatch stream. */
void vg_plugin_set_gpus(struct vg_plugin *p, const struct vg_gpu *gpus, unsigned ngpus);
/* Every ListAndWatch stream sends the full device list again. */
void vg_plugin_devices_changed(struct vg_plugin *p);

/* One line on stderr, prefixed with the program name. */
void vg_plog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

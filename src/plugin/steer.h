/*
 * steer.h -- GetPreferredAllocation that follows the scheduler.
 *
 * The scheduler extender chose physical GPUs for every GPU container of a
 * pod and wrote them in the pod's `vgpu.io/assigned` annotation. The kubelet
 * chooses the device IDs itself and asks the plugin for a preference first,
 * but its request names no pod. Steering finds the pod anyway, without a
 * node lock: the kubelet admits one pod at a time and lists a pod in its
 * PodResources API from the moment its admission starts, so the container
 * being allocated is the one that is listed, is assigned GPUs for this
 * resource, and holds no IDs of it yet. Steering answers with IDs on exactly
 * those GPUs. When that is not decisive (the pod is not listed yet, several
 * such containers), it falls back to the kubelet's own order of admission
 * (oldest pod first), and the binder still checks the result
 * (docs/allocation.md, "Steering").
 */
#ifndef VG_PLUGIN_STEER_H
#define VG_PLUGIN_STEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vg_k8s_client;
struct vg_steer;

/* One container's GetPreferredAllocation request. IDs are "<GPU-UUID>::<n>". */
struct vg_steer_request {
  const char *resource;
  bool one_gpu; /* memory dialects (gpushare, cce): all IDs on one GPU */
  const char *const *available;
  size_t n_available;
  const char *const *must; /* must_include */
  size_t n_must;
  size_t size; /* allocation_size */
};

/* k8s is borrowed (must outlive the steer). node: this Node's name.
 * podresources_socket: NULL for the kubelet's default. NULL on bad input. */
struct vg_steer *vg_steer_new(struct vg_k8s_client *k8s, const char *node,
                              const char *podresources_socket, bool debug, struct vg_err *err);
void vg_steer_free(struct vg_steer *s);

/* The preferred IDs for rq, written as pointers into rq's arrays to out[0..size):
 * returns rq->size when an assignment decides, 0 when steering has no opinion
 * (no assigned container waits for this resource, the API or PodResources
 * cannot be read, or the assigned GPUs lack free IDs) -- then the plugin's
 * own rule applies. Thread-safe. */
size_t vg_steer_prefer(struct vg_steer *s, const struct vg_steer_request *rq, const char **out);

/* The same with the steer as a void * (for vg_plugin_set_preference_source). */
size_t vg_steer_prefer_fn(void *steer, const struct vg_steer_request *rq, const char **out);

struct vg_steer_stats {
  uint64_t calls;      /* requests seen */
  uint64_t steered;    /* answered from an assignment */
  uint64_t decisive;   /* ... of which the pod under admission was unambiguous */
  uint64_t unassigned; /* no assigned container waits for the resource */
  uint64_t no_room;    /* the assigned GPUs lack free IDs (the binder will refuse) */
  uint64_t malformed;  /* assignments that did not parse (the pod is skipped) */
  uint64_t errors;     /* PodResources or API server failures */
};
void vg_steer_get_stats(struct vg_steer *s, struct vg_steer_stats *st);

#endif

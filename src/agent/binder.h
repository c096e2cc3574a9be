/*
 * binder.h -- step 2 of docs/allocation.md: binds each container's limits,
 * which only its pod says, into the region file that Allocate pre-created
 * with its limits marked pending.
 *
 * A thread lists the kubelet's PodResources (which pod and container holds
 * which device IDs), finds the slot region <state_dir>/slots/<hash>/region.cache
 * of every container holding IDs of a resource with pod-bound limits (vgpu's
 * count resource, cce's memory resource), and for each one still
 * LIMITS_PENDING reads the pod from the API server, computes the container's
 * limits from its resources.limits, writes them for every GPU its IDs name and
 * clears the pending mark. It runs after every vg_binder_wake() (the plugin
 * calls it after each Allocate), retrying quickly for a few seconds because
 * the kubelet records an assignment only once Allocate has returned, and
 * every 2 s as a safety net. Whatever cannot be bound (pod not in the API,
 * no limits of ours, the API server down) stays pending: libvgpu fails closed
 * after its timeout rather than run the container unlimited.
 */
#ifndef VG_BINDER_H
#define VG_BINDER_H

#include <stdint.h>

#include "config.h"
#include "devices.h"
#include "err.h"

struct vg_k8s_client;
struct vg_binder;
struct vg_assign_key;

/* cfg is copied. k8s (may be NULL: nothing can be bound) is borrowed and must
 * outlive the binder. podresources_socket: NULL for the kubelet's default.
 * state_dir: NULL for cfg->state_dir. */
struct vg_binder *vg_binder_new(const struct vg_plugin_config *cfg, struct vg_k8s_client *k8s,
                                const char *podresources_socket, const char *state_dir,
                                struct vg_err *err);
/* The node's GPUs (their memory is what gpumem-percentage is a share of);
 * copied. Without it, the memory recorded in the region entry is used. */
void vg_binder_set_gpus(struct vg_binder *b, const struct vg_gpu *gpus, unsigned n);
/* The node's name: with it, each pass also serves the live resizes of the
 * containers on this node (resizer.h). Set before vg_binder_start. */
void vg_binder_set_node(struct vg_binder *b, const char *node);
/* From now on, an assignment's limits (and a resize's) are written only when
 * vgpu-scheduler signed it (vgpu.io/assigned-mac, assignment_mac.h); any
 * other leaves the container pending, naming why. key is borrowed. Set
 * before vg_binder_start. */
void vg_binder_set_assignment_key(struct vg_binder *b, struct vg_assign_key *key);
/* Starts the thread. 0, or -1 with err. */
int vg_binder_start(struct vg_binder *b, struct vg_err *err);
/* Asks for a pass now (and quick retries after it). Any thread, cheap. */
void vg_binder_wake(struct vg_binder *b);
/* The same with the binder as a void * (for vg_plugin_set_allocate_observer). */
void vg_binder_wake_fn(void *binder);
/* One pass in the calling thread (tests, or without the thread): returns how
 * many containers were bound, or -1 with err when PodResources failed. */
int vg_binder_run_once(struct vg_binder *b, struct vg_err *err);
/* Stops the thread (if started) and frees. NULL is fine. */
void vg_binder_stop(struct vg_binder *b);

struct vg_binder_stats {
  uint64_t passes;      /* completed passes, failed ones included */
  uint64_t bound;       /* containers whose limits were written */
  uint64_t list_errors; /* PodResources calls that failed */
  uint64_t api_errors;  /* pod reads that failed other than 404 */
  uint64_t unbindable;  /* pending containers left pending this pass (last pass) */
  uint64_t untrusted;   /* container regions found held, forged or replaced (distrust.h) */
  char last_error[VG_ERR_MAX];
};
void vg_binder_get_stats(struct vg_binder *b, struct vg_binder_stats *st);

/* The slot directory name: vg_slot_name (slot.h), shared with Allocate. */

#endif

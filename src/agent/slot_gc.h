/*
 * slot_gc.h -- removes the slot directories of containers that are gone.
 *
 * Allocate creates <stateDir>/slots/<hash> for a container's device IDs
 * (slot.h): the region file, and the mount points the runtime adds. Nothing
 * removed them, so a node kept one per container it ever ran (10 for 7
 * pods on the first real node). The kubelet is the source of truth for
 * which container holds which device IDs (PodResources List): a slot whose
 * IDs no listed container holds belongs to a container that is gone.
 *
 * A pass removes such a slot only when all of these hold:
 *   - PodResources answered, and did not list the slot's IDs in the
 *     previous pass either (one odd answer removes nothing);
 *   - the slot was last handed out by Allocate at least `grace` ago:
 *     Allocate stamps the directory's mtime, and the kubelet lists a
 *     container's IDs only once Allocate has returned, so a fresh slot is
 *     not listed yet;
 *   - no live process holds a slot of its region file (a container still
 *     running keeps its slot, whatever the kubelet says);
 *   - with the API server: every unfinished pod bound to the node is listed
 *     by the kubelet. A kubelet that has just restarted, or cannot reach the
 *     API server, lists fewer pods than run; then nothing is removed. (Pods
 *     cannot be matched to slots through the API server itself: only the
 *     kubelet knows which IDs a container holds.)
 * The removal itself runs under the plugin's slots lock, taken for writing
 * (Allocates take it for reading), and re-checks the stamp: an Allocate
 * reusing the slot at that moment keeps it.
 */
#ifndef VG_AGENT_SLOT_GC_H
#define VG_AGENT_SLOT_GC_H

#include <pthread.h>
#include <stdint.h>

#include "err.h"

struct vg_k8s_client;
struct vg_slot_gc;

struct vg_slot_gc_opts {
  const char *state_dir;           /* <state_dir>/slots */
  const char *podresources_socket; /* NULL: the kubelet's default */
  struct vg_k8s_client *k8s;       /* NULL: no check against the API server */
  const char *node;                /* needed with k8s */
  unsigned grace_s;                /* > 0 */
  unsigned interval_ms;            /* between passes; 0: grace / 4, at most 10 s */
  pthread_rwlock_t *slots_lock;    /* the plugin's (plugin.h) */
};

/* Everything in o is copied except k8s and slots_lock (borrowed). NULL with
 * err on bad options. */
struct vg_slot_gc *vg_slot_gc_new(const struct vg_slot_gc_opts *o, struct vg_err *err);
/* Runs passes in a thread. 0, or -1 with err. */
int vg_slot_gc_start(struct vg_slot_gc *g, struct vg_err *err);
/* One pass on the caller's thread: the slots removed, or -1 with err when
 * PodResources or the API server could not be read. */
int vg_slot_gc_run_once(struct vg_slot_gc *g, struct vg_err *err);
/* Stops the thread (if started) and frees. NULL is fine. */
void vg_slot_gc_stop(struct vg_slot_gc *g);

struct vg_slot_gc_stats {
  uint64_t passes;  /* completed passes, failed ones included */
  uint64_t removed; /* slot directories removed */
  uint64_t errors;  /* passes that could not read their sources, or not remove a slot */
};
void vg_slot_gc_get_stats(struct vg_slot_gc *g, struct vg_slot_gc_stats *st);

#endif

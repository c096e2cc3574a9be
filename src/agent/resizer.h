/*
 * resizer.h -- the node agent's half of a live resize (docs/resize.md).
 *
 * The binder runs it once per pass: vg_resizer_begin lists the pods on this
 * node that carry an open resize request (label vgpu.io/resize=requested:
 * one label-selected list, nothing when there is none), the binder hands it
 * every bound container it finds in PodResources with its slot region, and
 * vg_resizer_end answers the requests whose container it never saw.
 *
 * For one container the node agent
 *   - checks a new request against what the container holds and puts any
 *     decrease in force at once (region limit first, which refuses a limit
 *     below what is charged, then the grant), then acknowledges it in
 *     vgpu.io/resize-node; vgpu-scheduler only frees capacity that the node
 *     has already taken away;
 *   - once vgpu-scheduler has Accepted it (vgpu.io/assigned holds the new
 *     amounts), writes the grant and the region limits from the assignment
 *     and marks it Applied; running processes see it at their next
 *     allocation or launch (libvgpu re-reads the grant when the region's
 *     generation moves);
 *   - once it is Refused (by vgpu-scheduler), restores the grant from the
 *     assignment (undoing a decrease made in advance).
 * The label goes when the request ends, so finished requests cost nothing.
 */
#ifndef VG_RESIZER_H
#define VG_RESIZER_H

#include <stdbool.h>

#include "err.h"
#include "podresources.h"
#include "region.h"

struct vg_k8s_client;
struct vg_resizer;
struct vg_assign_key;

/* NULL when no pod on node has an open request (or the list failed: err;
 * the next pass tries again). key (borrowed, may be NULL): a grant is taken
 * only from an assignment vgpu-scheduler signed (assignment_mac.h). */
struct vg_resizer *vg_resizer_begin(struct vg_k8s_client *k8s, const char *node,
                                    struct vg_assign_key *key, struct vg_err *err);
/* A container bound on this node: d names it, shm is its slot's region and
 * slot_dir the slot directory (where grant/ lives). */
void vg_resizer_container(struct vg_resizer *r, const struct vg_pod_devices *d, struct vg_shm *shm,
                          const char *slot_dir);
/* Refuses the new requests whose container was not seen (only when complete:
 * every container of the node was handed over, PodResources answered), and
 * frees. Returns how many requests changed state in this pass. NULL is
 * fine. */
int vg_resizer_end(struct vg_resizer *r, bool complete);

#endif

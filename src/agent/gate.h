/*
 * gate.h -- Allocate refuses a container whose pod vgpu-scheduler did not
 * place.
 *
 * GPU memory and compute are accounted per GPU by the scheduler extender,
 * from the `vgpu.io/assigned` annotation it writes when it binds a pod; the
 * kubelet's device IDs are only counters. A pod bound without the extender
 * (spec.nodeName set by hand, or another scheduler) would take device IDs
 * the extender does not know about, run on GPUs it believes free, and make
 * the pods it did place fail their admission ("requested number of devices
 * unavailable"). So Allocate refuses such a container: the kubelet fails
 * the pod's admission with our message (UnexpectedAdmissionError) and
 * releases the IDs, and nothing is counted for the pod anywhere.
 *
 * Allocate names no pod; the gate finds it as steering does (steer.h): the
 * kubelet lists the pod under admission in PodResources from the start of
 * its admission, so the candidates are the unfinished pods of the node that
 * the kubelet lists, with a container asking for the resource and holding
 * no IDs of it yet. If one of them carries an assignment entry for that
 * container and resource on this node, the Allocate is allowed; if there
 * are candidates and none does, it is refused, naming the oldest. When
 * nothing identifies the pod (no candidate, or PodResources or the API
 * server cannot be read), the gate cannot tell and allows: the binder still
 * fails vgpu/cce containers closed when their pod cannot be read
 * (docs/allocation.md).
 *
 * With an assignment key (--assignment-key), an assignment counts only when
 * vgpu-scheduler signed it for this pod and node (vgpu.io/assigned-mac,
 * assignment_mac.h): one that is unsigned, forged or copied from another
 * pod is refused like a pod the scheduler did not place, and so is every
 * pod while the key file cannot be read (fail closed).
 */
#ifndef VG_AGENT_GATE_H
#define VG_AGENT_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vg_k8s_client;
struct vg_gate;
struct vg_assign_key;
struct vg_admit_pod; /* plugin.h */

/* k8s is borrowed (must outlive the gate). node: this Node's name.
 * podresources_socket: NULL for the kubelet's default. NULL on bad input. */
struct vg_gate *vg_gate_new(struct vg_k8s_client *k8s, const char *node,
                            const char *podresources_socket, struct vg_err *err);
void vg_gate_free(struct vg_gate *g);

/* From now on, assignments must carry vgpu-scheduler's MAC under key
 * (borrowed; must outlive the gate). Call before the gate is in use. */
void vg_gate_set_key(struct vg_gate *g, struct vg_assign_key *key);

/* One container's Allocate of IDs of resource: 0 to go on, 1 to refuse it
 * with the reason in why (one line, naming the pod and what to do). When it
 * goes on for a pod it identified, pod gets the pod's total of resource
 * (known: true); a pod vgpu-scheduler marked ALIYUN_COM_GPU_MEM_ASSIGNED
 * "false" is marked "true" with a new ALIYUN_COM_GPU_MEM_ASSUME_TIME, as
 * Aliyun's device plugin does (a failure is logged; the Allocate goes on).
 * Thread-safe. */
int vg_gate_check(struct vg_gate *g, const char *resource, struct vg_admit_pod *pod, char *why,
                  size_t len);

/* The same with the gate as a void * (for vg_plugin_set_admission_check). */
int vg_gate_check_fn(void *gate, const char *resource, struct vg_admit_pod *pod, char *why,
                     size_t len);

struct vg_gate_stats {
  uint64_t assigned;     /* the pod under admission carries its assignment */
  uint64_t refused;      /* ... carries none, or one vgpu-scheduler did not sign: refused */
  uint64_t unidentified; /* no pod under admission found: allowed */
  uint64_t errors;       /* PodResources or the API server failed: allowed */
};
void vg_gate_get_stats(struct vg_gate *g, struct vg_gate_stats *st);

#endif

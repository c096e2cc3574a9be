/*
 * routing.h -- the names that say whether a pod is vgpu-scheduler's: the one
 * definition of each, shared by the admission webhook that routes pods
 * (webhook/decide.c), vgpu-scheduler that reports pods nobody routed
 * (extender/extender_unrouted.c) and the node agent's gate, which refuses
 * pods another scheduler placed (agent/gate.c). docs/admission.md says what
 * each means to a user.
 */
#ifndef VG_K8S_ROUTING_H
#define VG_K8S_ROUTING_H

/* spec.schedulerName of a routed pod. */
#define VG_SCHEDULER_NAME "vgpu-scheduler"
/* A pod annotated vgpu.io/scheduler: skip is left to its own scheduler. */
#define VG_OPT_OUT_ANNOTATION "vgpu.io/scheduler"
#define VG_OPT_OUT_VALUE "skip"
/* Pods and namespaces labelled vgpu.io/admission=ignore are never sent to the
 * webhook (its objectSelector and namespaceSelector, deploy/base). */
#define VG_ADMISSION_LABEL "vgpu.io/admission"
#define VG_ADMISSION_IGNORE "ignore"
/* The label a routed pod carries (docs/admission.md, the guard). */
#define VG_MANAGED_LABEL "vgpu.io/managed"
#define VG_MANAGED_VALUE "true"
/* The namespaces whose pods the webhook's policy never routes. */
#define VG_SYSTEM_NAMESPACE "vgpu-system"
#define VG_KUBE_SYSTEM_NAMESPACE "kube-system"

#endif

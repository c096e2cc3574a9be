/*
 * podresources.h -- a client of the kubelet's PodResources API v1: which pod
 * and container the kubelet gave which device IDs (docs/allocation.md, step 2).
 *
 * One unary call, /v1.PodResourcesLister/List, over gRPC C-core on the
 * kubelet's unix socket (/var/lib/kubelet/pod-resources/kubelet.sock by
 * default). The answer is handed to a callback per container and resource.
 */
#ifndef VG_PODRESOURCES_H
#define VG_PODRESOURCES_H

#include <stddef.h>

#include "err.h"

#define VG_PODRESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"

/* One container's device IDs of one resource (everything borrowed for the
 * duration of the callback). */
struct vg_pod_devices {
  const char *ns, *pod, *container;
  const char *resource;
  const char *const *ids;
  size_t n_ids;
};

/* Non-zero stops the walk; vg_podresources_list then returns that value. */
typedef int (*vg_podresources_fn)(const struct vg_pod_devices *d, void *arg);

/* Lists the kubelet's pod resources at socket_path (a path, or a "unix:"
 * target) and calls cb for every container holding device IDs, once per
 * resource name. timeout_ms bounds the call. Returns 0, the callback's
 * non-zero value, or -1 with err naming the socket and gRPC's reason. */
int vg_podresources_list(const char *socket_path, int timeout_ms, vg_podresources_fn cb, void *arg,
                         struct vg_err *err);

/* The same, and cb is also called once for every container that holds no
 * device IDs at all, with resource NULL and n_ids 0: the kubelet lists a pod
 * from the moment it starts admitting it, so such a container may be the one
 * whose devices are being chosen right now (docs/allocation.md, steering). */
int vg_podresources_list_all(const char *socket_path, int timeout_ms, vg_podresources_fn cb,
                             void *arg, struct vg_err *err);

#endif

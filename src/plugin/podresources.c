/* podresources.c -- see podresources.h. */
#include "podresources.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "grpc_server.h"
#include "podresources.pb-c.h"

static int walk(const char *socket_path, int timeout_ms, bool with_empty, vg_podresources_fn cb,
                void *arg, struct vg_err *err) {
  char target[4200];
  if (strncmp(socket_path, "unix:", 5) == 0)
    snprintf(target, sizeof(target), "%s", socket_path);
  else
    snprintf(target, sizeof(target), "unix:%s", socket_path);
  V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
  ProtobufCMessage *msg = NULL;
  char detail[512] = "";
  grpc_status_code st = vg_rpc_call(target, "/v1.PodResourcesLister/List", &req.base,
                                    &v1__list_pod_resources_response__descriptor, &msg, timeout_ms,
                                    detail, sizeof(detail));
  if (st != GRPC_STATUS_OK) {
    if (msg != NULL) protobuf_c_message_free_unpacked(msg, NULL);
    return vg_err_set(err, "PodResources List on %s failed (gRPC status %d): %s", target, (int)st,
                      detail[0] != '\0' ? detail : "no detail");
  }
  if (msg == NULL) return vg_err_set(err, "PodResources List on %s: empty reply", target);
  const V1__ListPodResourcesResponse *resp = (const void *)msg;
  int rc = 0;
  for (size_t p = 0; p < resp->n_pod_resources && rc == 0; p++) {
    const V1__PodResources *pr = resp->pod_resources[p];
    for (size_t c = 0; c < pr->n_containers && rc == 0; c++) {
      const V1__ContainerResources *cr = pr->containers[c];
      size_t held = 0;
      for (size_t d = 0; d < cr->n_devices; d++) held += cr->devices[d]->n_device_ids;
      if (held == 0 && with_empty) {
        struct vg_pod_devices none = {pr->namespace_, pr->name, cr->name, NULL, NULL, 0};
        rc = cb(&none, arg);
      }
      for (size_t d = 0; d < cr->n_devices && rc == 0; d++) {
        const V1__ContainerDevices *cd = cr->devices[d];
        if (cd->n_device_ids == 0) continue;
        struct vg_pod_devices one = {
            .ns = pr->namespace_,
            .pod = pr->name,
            .container = cr->name,
            .resource = cd->resource_name,
            .ids = (const char *const *)cd->device_ids,
            .n_ids = cd->n_device_ids,
        };
        rc = cb(&one, arg);
      }
    }
  }
  protobuf_c_message_free_unpacked(msg, NULL);
  return rc;
}

int vg_podresources_list(const char *socket_path, int timeout_ms, vg_podresources_fn cb, void *arg,
                         struct vg_err *err) {
  return walk(socket_path, timeout_ms, false, cb, arg, err);
}

int vg_podresources_list_all(const char *socket_path, int timeout_ms, vg_podresources_fn cb,
                             void *arg, struct vg_err *err) {
  return walk(socket_path, timeout_ms, true, cb, arg, err);
}

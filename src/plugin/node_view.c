/* node_view.c -- see node_view.h. */
#include "node_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s.h"
#include "log.h"
#include "podresources.h"
#include "slot.h"

static char *dup_or_empty(const char *s) { return strdup(s != NULL ? s : ""); }

static int collect(const struct vg_pod_devices *d, void *arg) {
  struct vg_node_view *v = arg;
  if (v->nheld == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    struct vg_node_held *h = realloc(v->held, cap * sizeof(*h));
    if (h == NULL) return 1; /* vg_node_view_read says what */
    v->held = h, v->cap = cap;
  }
  struct vg_node_held *h = &v->held[v->nheld++];
  h->ns = dup_or_empty(d->ns), h->pod = dup_or_empty(d->pod);
  h->container = dup_or_empty(d->container);
  h->resource = d->resource != NULL ? strdup(d->resource) : NULL;
  if (d->resource == NULL || vg_slot_name(d->ids, d->n_ids, h->slot) != 0) h->slot[0] = '\0';
  return 0;
}

int vg_node_view_read(struct vg_node_view *v, struct vg_k8s_client *k8s, const char *node,
                      const char *podresources_socket, int timeout_ms, struct vg_err *err) {
  memset(v, 0, sizeof(*v));
  char rv[64];
  int rc = vg_podresources_list_all(podresources_socket, timeout_ms, collect, v, err);
  if (rc > 0) rc = vg_err_set(err, "out of memory reading PodResources");
  if (rc == 0 && k8s != NULL) rc = vg_k8s_list_pods(k8s, node, &v->pods, rv, sizeof(rv), err);
  if (rc != 0) {
    vg_node_view_free(v);
    return -1;
  }
  return 0;
}

void vg_node_view_free(struct vg_node_view *v) {
  for (size_t i = 0; i < v->nheld; i++) {
    free(v->held[i].ns), free(v->held[i].pod), free(v->held[i].container);
    free(v->held[i].resource);
  }
  free(v->held);
  json_object_put(v->pods);
  memset(v, 0, sizeof(*v));
}

int vg_node_source_init(struct vg_node_source *src, struct vg_k8s_client *k8s, const char *node,
                        const char *podresources_socket, const char *who, const char *meanwhile,
                        struct vg_err *err) {
  memset(src, 0, sizeof(*src));
  if (k8s == NULL) return vg_err_set(err, "%s: no Kubernetes API client to list pods with", who);
  if (node == NULL || node[0] == '\0' || strlen(node) >= sizeof(src->node))
    return vg_err_set(err, "%s: a node name (1..255 bytes) is needed to list the node's pods", who);
  src->k8s = k8s;
  snprintf(src->node, sizeof(src->node), "%s", node);
  snprintf(src->socket, sizeof(src->socket), "%s",
           podresources_socket != NULL && podresources_socket[0] != '\0' ? podresources_socket
                                                                         : VG_PODRESOURCES_SOCKET);
  src->who = who;
  src->meanwhile = meanwhile;
  pthread_mutex_init(&src->lock, NULL);
  return 0;
}

void vg_node_source_destroy(struct vg_node_source *src) { pthread_mutex_destroy(&src->lock); }

int vg_node_view_fetch(struct vg_node_source *src, struct vg_node_view *v, int timeout_ms) {
  struct vg_err err = {""};
  int rc = vg_node_view_read(v, src->k8s, src->node, src->socket, timeout_ms, &err);
  pthread_mutex_lock(&src->lock);
  bool changed = rc != 0 ? strcmp(src->last_error, err.msg) != 0 : src->last_error[0] != '\0';
  snprintf(src->last_error, sizeof(src->last_error), "%s", rc != 0 ? err.msg : "");
  pthread_mutex_unlock(&src->lock);
  if (changed && rc != 0) vg_info("%s: %s; %s", src->who, err.msg, src->meanwhile);
  if (changed && rc == 0)
    vg_info("%s: the kubelet's PodResources and the API server answer again", src->who);
  return rc;
}

static json_object *items(const struct vg_node_view *v) {
  json_object *it = NULL;
  json_object_object_get_ex(v->pods, "items", &it);
  return json_object_is_type(it, json_type_array) ? it : NULL;
}

size_t vg_node_view_npods(const struct vg_node_view *v) {
  json_object *it = items(v);
  return it != NULL ? json_object_array_length(it) : 0;
}

json_object *vg_node_view_pod(const struct vg_node_view *v, size_t i) {
  return json_object_array_get_idx(items(v), i);
}

void vg_node_view_held(const struct vg_node_view *v, const char *ns, const char *pod,
                       const char *container, const char *resource, bool *listed, bool *holds) {
  *listed = false;
  if (holds != NULL) *holds = false;
  for (size_t i = 0; i < v->nheld; i++) {
    const struct vg_node_held *h = &v->held[i];
    if (strcmp(h->ns, ns) != 0 || strcmp(h->pod, pod) != 0) continue;
    *listed = true;
    if (holds != NULL && container != NULL && resource != NULL && h->resource != NULL &&
        strcmp(h->container, container) == 0 && strcmp(h->resource, resource) == 0)
      *holds = true;
  }
}

const char *vg_json_str_at(json_object *o, const char *a, const char *b) {
  json_object *x = NULL, *y = NULL;
  if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y)) return "";
  return json_object_is_type(y, json_type_string) ? json_object_get_string(y) : "";
}

bool vg_pod_finished(json_object *pod) {
  const char *phase = vg_json_str_at(pod, "status", "phase");
  return strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
}

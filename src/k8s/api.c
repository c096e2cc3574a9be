/* api.c -- the node and pod operations vgpu uses; see k8s.h. */
#include "k8s_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_get.h"
#include "log.h"

#define MERGE_PATCH "application/merge-patch+json"

/* sub: "" for the Node itself, "/status" for its status subresource. */
static void node_path(char *p, size_t len, const char *name, const char *sub) {
  char e[512];
  snprintf(p, len, "/api/v1/nodes/%s%s", vg_k8s_escape(name, e, sizeof(e)), sub);
}

static void pod_path(char *p, size_t len, const char *ns, const char *name, const char *sub) {
  char e1[512], e2[512];
  snprintf(p, len, "/api/v1/namespaces/%s/pods/%s%s", vg_k8s_escape(ns, e1, sizeof(e1)),
           vg_k8s_escape(name, e2, sizeof(e2)), sub);
}

int vg_k8s_get_node(struct vg_k8s_client *c, const char *name, json_object **out,
                    struct vg_err *err) {
  char p[1024];
  node_path(p, sizeof(p), name, "");
  return vg_k8s_call(c, "GET", p, NULL, NULL, out, err);
}

int vg_k8s_get_pod(struct vg_k8s_client *c, const char *ns, const char *name, json_object **out,
                   struct vg_err *err) {
  char p[1300];
  pod_path(p, sizeof(p), ns, name, "");
  return vg_k8s_call(c, "GET", p, NULL, NULL, out, err);
}

/* {"metadata":{"annotations":{...},"resourceVersion":rv}} */
static char *annotation_patch(json_object *annotations, const char *rv) {
  json_object *patch = json_object_new_object();
  json_object *meta = json_object_new_object();
  json_object_object_add(meta, "annotations", json_object_get(annotations));
  if (rv != NULL) json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
  json_object_object_add(patch, "metadata", meta);
  char *s = strdup(json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN));
  json_object_put(patch);
  return s;
}

static int patch_annotations(struct vg_k8s_client *c, const char *path, json_object *annotations,
                             const char *rv, json_object **out, struct vg_err *err) {
  if (annotations == NULL || !json_object_is_type(annotations, json_type_object))
    return vg_err_set(err, "PATCH %s: annotations must be a JSON object", path);
  char *body = annotation_patch(annotations, rv);
  if (body == NULL) return vg_err_set(err, "PATCH %s: out of memory", path);
  int rc = vg_k8s_call(c, "PATCH", path, MERGE_PATCH, body, out, err);
  free(body);
  return rc;
}

/* Through nodes/status: the node agent's role grants that, not a patch of
 * the Node, whose spec (taints, unschedulable) a status write cannot touch
 * (docs/install.md, "Privileges"). */
int vg_k8s_patch_node_annotations(struct vg_k8s_client *c, const char *name,
                                  json_object *annotations, const char *resource_version,
                                  json_object **out, struct vg_err *err) {
  char p[1024];
  node_path(p, sizeof(p), name, "/status");
  return patch_annotations(c, p, annotations, resource_version, out, err);
}

int vg_k8s_patch_pod_annotations(struct vg_k8s_client *c, const char *ns, const char *name,
                                 json_object *annotations, const char *resource_version,
                                 json_object **out, struct vg_err *err) {
  char p[1300];
  pod_path(p, sizeof(p), ns, name, "");
  return patch_annotations(c, p, annotations, resource_version, out, err);
}

static int patch_pod_metadata(struct vg_k8s_client *c, const char *ns, const char *name,
                              const char *sub, json_object *labels, json_object *annotations,
                              const char *resource_version, json_object **out, struct vg_err *err) {
  char p[1300];
  pod_path(p, sizeof(p), ns, name, sub);
  json_object *patch = json_object_new_object(), *meta = json_object_new_object();
  if (labels != NULL) json_object_object_add(meta, "labels", json_object_get(labels));
  if (annotations != NULL)
    json_object_object_add(meta, "annotations", json_object_get(annotations));
  if (resource_version != NULL)
    json_object_object_add(meta, "resourceVersion", json_object_new_string(resource_version));
  json_object_object_add(patch, "metadata", meta);
  int rc = vg_k8s_call(c, "PATCH", p, MERGE_PATCH,
                       json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN), out, err);
  json_object_put(patch);
  return rc;
}

int vg_k8s_patch_pod_metadata(struct vg_k8s_client *c, const char *ns, const char *name,
                              json_object *labels, json_object *annotations,
                              const char *resource_version, json_object **out, struct vg_err *err) {
  return patch_pod_metadata(c, ns, name, "", labels, annotations, resource_version, out, err);
}

int vg_k8s_patch_pod_status_metadata(struct vg_k8s_client *c, const char *ns, const char *name,
                                     json_object *labels, json_object *annotations,
                                     const char *resource_version, json_object **out,
                                     struct vg_err *err) {
  return patch_pod_metadata(c, ns, name, "/status", labels, annotations, resource_version, out,
                            err);
}

/* An RFC 3339 time in UTC, second precision (what Event timestamps take). */
static void rfc3339_now(char *buf, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int vg_k8s_pod_event(struct vg_k8s_client *c, json_object *pod, const char *type,
                     const char *reason, const char *message, const char *component,
                     struct vg_err *err) {
  json_object *pmeta = vg_json_get(pod, "metadata");
  const char *ns = vg_json_get_str(pmeta, "namespace"), *name = vg_json_get_str(pmeta, "name");
  const char *uid = vg_json_get_str(pmeta, "uid");
  if (ns == NULL || name == NULL) return vg_err_set(err, "event %s: the pod has no name", reason);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char ev_name[400], now[40], e[512], p[700];
  /* Unique per pod and nanosecond, as client-go's recorder names them. */
  snprintf(ev_name, sizeof(ev_name), "%.253s.%llx%09ld", name, (unsigned long long)ts.tv_sec,
           ts.tv_nsec);
  rfc3339_now(now, sizeof(now));
  json_object *ev = json_object_new_object(), *meta = json_object_new_object();
  json_object *obj = json_object_new_object(), *src = json_object_new_object();
  json_object_object_add(meta, "name", json_object_new_string(ev_name));
  json_object_object_add(meta, "namespace", json_object_new_string(ns));
  json_object_object_add(ev, "metadata", meta);
  json_object_object_add(obj, "kind", json_object_new_string("Pod"));
  json_object_object_add(obj, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(obj, "namespace", json_object_new_string(ns));
  json_object_object_add(obj, "name", json_object_new_string(name));
  if (uid != NULL) json_object_object_add(obj, "uid", json_object_new_string(uid));
  json_object_object_add(ev, "involvedObject", obj);
  json_object_object_add(ev, "type", json_object_new_string(type));
  json_object_object_add(ev, "reason", json_object_new_string(reason));
  json_object_object_add(ev, "message", json_object_new_string(message));
  json_object_object_add(src, "component", json_object_new_string(component));
  json_object_object_add(ev, "source", src);
  json_object_object_add(ev, "firstTimestamp", json_object_new_string(now));
  json_object_object_add(ev, "lastTimestamp", json_object_new_string(now));
  json_object_object_add(ev, "count", json_object_new_int(1));
  snprintf(p, sizeof(p), "/api/v1/namespaces/%s/events", vg_k8s_escape(ns, e, sizeof(e)));
  int rc = vg_k8s_call(c, "POST", p, "application/json",
                       json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN), NULL, err);
  json_object_put(ev);
  return rc;
}

int vg_k8s_pod_event_named(struct vg_k8s_client *c, const char *ns, const char *name,
                           const char *type, const char *reason, const char *message,
                           const char *component, struct vg_err *err) {
  json_object *pod = json_object_new_object(), *meta = json_object_new_object();
  json_object_object_add(meta, "namespace", json_object_new_string(ns));
  json_object_object_add(meta, "name", json_object_new_string(name));
  json_object_object_add(pod, "metadata", meta);
  int rc = vg_k8s_pod_event(c, pod, type, reason, message, component, err);
  json_object_put(pod);
  return rc;
}

static const char *object_rv(json_object *obj) {
  json_object *meta, *rv;
  if (json_object_object_get_ex(obj, "metadata", &meta) &&
      json_object_object_get_ex(meta, "resourceVersion", &rv))
    return json_object_get_string(rv);
  return NULL;
}

/* GET path, PATCH path + sub (a subresource or ""). */
static int update_annotations(struct vg_k8s_client *c, const char *path, const char *sub,
                              vg_k8s_update_fn fn, void *arg, int max_attempts,
                              struct vg_err *err) {
  char target[1400];
  snprintf(target, sizeof(target), "%s%s", path, sub);
  if (max_attempts < 1) max_attempts = 1;
  int rc = VG_K8S_EFAIL;
  for (int attempt = 1; attempt <= max_attempts; attempt++) {
    json_object *cur = NULL;
    rc = vg_k8s_call(c, "GET", path, NULL, NULL, &cur, err);
    if (rc != 0) return rc;
    json_object *ann = NULL;
    int f = fn(cur, &ann, arg, err);
    if (f != 0) {
      json_object_put(cur);
      json_object_put(ann);
      return f > 0 ? 0 : (f == -1 ? VG_K8S_EFAIL : f);
    }
    const char *rv = object_rv(cur);
    rc = patch_annotations(c, target, ann, rv, NULL, err);
    json_object_put(cur);
    json_object_put(ann);
    if (rc != VG_K8S_ECONFLICT) return rc;
    vg_debug("k8s: %s: conflict on attempt %d/%d, re-reading", path, attempt, max_attempts);
  }
  char msg[VG_ERR_MAX];
  snprintf(msg, sizeof(msg), "%s", err != NULL ? err->msg : "");
  vg_err_set(err, "%s: still conflicting after %d attempts (last: %s)", path, max_attempts, msg);
  return rc;
}

int vg_k8s_update_node_annotations(struct vg_k8s_client *c, const char *name, vg_k8s_update_fn fn,
                                   void *arg, int max_attempts, struct vg_err *err) {
  char p[1024];
  node_path(p, sizeof(p), name, "");
  return update_annotations(c, p, "/status", fn, arg, max_attempts, err);
}

int vg_k8s_update_pod_annotations(struct vg_k8s_client *c, const char *ns, const char *name,
                                  vg_k8s_update_fn fn, void *arg, int max_attempts,
                                  struct vg_err *err) {
  char p[1300];
  pod_path(p, sizeof(p), ns, name, "");
  return update_annotations(c, p, "", fn, arg, max_attempts, err);
}

int vg_k8s_list_pods_selected(struct vg_k8s_client *c, const char *node_name,
                              const char *label_selector, json_object **out, char *rv,
                              size_t rv_len, struct vg_err *err) {
  char p[2048] = "/api/v1/pods";
  if (node_name != NULL) {
    char sel[600], e[800];
    snprintf(sel, sizeof(sel), "spec.nodeName=%s", node_name);
    snprintf(p, sizeof(p), "/api/v1/pods?fieldSelector=%s", vg_k8s_escape(sel, e, sizeof(e)));
  }
  if (label_selector != NULL) {
    char e[800];
    size_t n = strlen(p);
    /* resourceVersion=0: served from the API server's watch cache, not
     * etcd -- these lists run every few seconds on every node. */
    snprintf(p + n, sizeof(p) - n, "%slabelSelector=%s&resourceVersion=0",
             node_name != NULL ? "&" : "?", vg_k8s_escape(label_selector, e, sizeof(e)));
  }
  json_object *list = NULL;
  int rc = vg_k8s_call(c, "GET", p, NULL, NULL, &list, err);
  if (rc != 0) return rc;
  json_object *items;
  const char *lrv = object_rv(list);
  if (!json_object_object_get_ex(list, "items", &items) ||
      !json_object_is_type(items, json_type_array) || lrv == NULL) {
    json_object_put(list);
    return vg_err_set(err, "GET %s%s: response is not a list (no items or resourceVersion)",
                      c->cfg.server, p);
  }
  if (rv != NULL) snprintf(rv, rv_len, "%s", lrv);
  if (out != NULL)
    *out = list;
  else
    json_object_put(list);
  return 0;
}

int vg_k8s_list_pods(struct vg_k8s_client *c, const char *node_name, json_object **out, char *rv,
                     size_t rv_len, struct vg_err *err) {
  return vg_k8s_list_pods_selected(c, node_name, NULL, out, rv, rv_len, err);
}

static int post_eviction(struct vg_k8s_client *c, const char *path, const char *ns,
                         const char *name, const char *version, struct vg_err *err) {
  json_object *ev = json_object_new_object(), *meta = json_object_new_object();
  json_object_object_add(ev, "apiVersion", json_object_new_string(version));
  json_object_object_add(ev, "kind", json_object_new_string("Eviction"));
  json_object_object_add(meta, "name", json_object_new_string(name));
  json_object_object_add(meta, "namespace", json_object_new_string(ns));
  json_object_object_add(ev, "metadata", meta);
  int rc = vg_k8s_call(c, "POST", path, "application/json",
                       json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN), NULL, err);
  json_object_put(ev);
  return rc;
}

int vg_k8s_evict_pod(struct vg_k8s_client *c, const char *ns, const char *name,
                     struct vg_err *err) {
  char p[1300];
  pod_path(p, sizeof(p), ns, name, "/eviction");
  int rc = post_eviction(c, p, ns, name, "policy/v1", err);
  /* policy/v1 came with Kubernetes 1.22; an older API server refuses the
   * kind (400) and takes the same object as policy/v1beta1. */
  if (rc == VG_K8S_EBADREQUEST) rc = post_eviction(c, p, ns, name, "policy/v1beta1", err);
  return rc;
}

int vg_k8s_bind_pod(struct vg_k8s_client *c, const char *ns, const char *name, const char *uid,
                    const char *node, json_object *annotations, struct vg_err *err) {
  json_object *b = json_object_new_object();
  json_object_object_add(b, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(b, "kind", json_object_new_string("Binding"));
  json_object *meta = json_object_new_object();
  json_object_object_add(meta, "name", json_object_new_string(name));
  json_object_object_add(meta, "namespace", json_object_new_string(ns));
  if (uid != NULL) json_object_object_add(meta, "uid", json_object_new_string(uid));
  if (annotations != NULL)
    json_object_object_add(meta, "annotations", json_object_get(annotations));
  json_object_object_add(b, "metadata", meta);
  json_object *target = json_object_new_object();
  json_object_object_add(target, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(target, "kind", json_object_new_string("Node"));
  json_object_object_add(target, "name", json_object_new_string(node));
  json_object_object_add(b, "target", target);
  char p[1300];
  pod_path(p, sizeof(p), ns, name, "/binding");
  int rc = vg_k8s_call(c, "POST", p, "application/json",
                       json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN), NULL, err);
  json_object_put(b);
  return rc;
}

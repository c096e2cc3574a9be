/*
 * k8s.h -- the small Kubernetes REST client shared by the device plugin, the
 * scheduler extender and the CLI (libcurl + json-c; libyaml for kubeconfig).
 *
 * Only what vgpu needs: nodes and pods get/patch, pod lists by node, Binding,
 * and watching pods with resourceVersion tracking. See docs/k8s-client.md.
 *
 * Every call is thread-safe on one client (a fresh curl easy handle per
 * request). Failures fill a struct vg_err naming the method, the URL, the HTTP
 * status and the API server's own message, and return one of the negative
 * codes below so callers can tell a conflict from an outage.
 */
#ifndef VG_K8S_H
#define VG_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <json-c/json.h>

#include "err.h"

/* Return codes (0 = success). vg_err_set's -1 is VG_K8S_EFAIL. */
enum {
  VG_K8S_OK = 0,
  VG_K8S_EFAIL = -1,         /* anything else: bad config, bad JSON, 5xx, ... */
  VG_K8S_ECONFLICT = -2,     /* 409: stale resourceVersion, or pod already bound */
  VG_K8S_ENOTFOUND = -3,     /* 404 */
  VG_K8S_EEXPIRED = -4,      /* 410: watch/list resourceVersion too old; relist */
  VG_K8S_EUNREACHABLE = -5,  /* connection refused, DNS, timeout, TLS failure */
  VG_K8S_EUNAUTHORIZED = -6, /* 401 or 403 */
  VG_K8S_EBADREQUEST = -7,   /* 400: the server does not take the object as sent */
};

/* ---- configuration (config.c) ---- */

struct vg_k8s_config {
  char *server;  /* "https://host:port" (no trailing slash) */
  char *source;  /* where it came from: kubeconfig path or "in-cluster" */
  char *ca_file; /* certificate-authority / in-cluster ca.crt */
  char *ca_data; /* certificate-authority-data, decoded PEM */
  size_t ca_data_len;
  bool insecure;    /* insecure-skip-tls-verify */
  char *token;      /* static bearer token */
  char *token_file; /* re-read at most once a minute (service-account tokens rotate) */
  char *cert_file, *key_file;
  char *cert_data, *key_data; /* decoded PEM of client-certificate-data / client-key-data */
  size_t cert_data_len, key_data_len;
  char *namespace_; /* in-cluster namespace file, or the context's namespace; may be NULL */
};

/* In-cluster: KUBERNETES_SERVICE_HOST/PORT and the service-account files in
 * sa_dir (NULL = /var/run/secrets/kubernetes.io/serviceaccount). */
int vg_k8s_config_in_cluster(struct vg_k8s_config *cfg, const char *sa_dir, struct vg_err *err);
/* kubeconfig at path: current-context -> cluster + user. */
int vg_k8s_config_kubeconfig(struct vg_k8s_config *cfg, const char *path, struct vg_err *err);
/* What the daemons do: the path if given, else $KUBECONFIG (first of a
 * ':'-list), else in-cluster. */
int vg_k8s_config_load(struct vg_k8s_config *cfg, const char *kubeconfig_path, struct vg_err *err);
/* What kubectl and its plugins do: the path if given, else $KUBECONFIG,
 * else ~/.kube/config, else in-cluster (in a pod); an error naming the three
 * ways to give one otherwise. */
int vg_k8s_config_kubectl(struct vg_k8s_config *cfg, const char *kubeconfig_path,
                          struct vg_err *err);
void vg_k8s_config_free(struct vg_k8s_config *cfg);

/* ---- client and raw requests (http.c) ---- */

struct vg_k8s_client;

/* Copies cfg. */
struct vg_k8s_client *vg_k8s_client_new(const struct vg_k8s_config *cfg, struct vg_err *err);
void vg_k8s_client_free(struct vg_k8s_client *c);
/* Whole-request timeout for non-watch calls (default 30 s) and connect
 * timeout (default 10 s), in milliseconds. */
void vg_k8s_client_set_timeouts(struct vg_k8s_client *c, long request_ms, long connect_ms);

struct vg_k8s_response {
  long status; /* HTTP status */
  char *body;  /* NUL-terminated */
  size_t len;
};

/* One request. path starts with '/', already escaped. body may be NULL.
 * Returns 0 with any HTTP status in resp, or VG_K8S_EUNREACHABLE / EFAIL when
 * no response arrived. */
int vg_k8s_request(struct vg_k8s_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, struct vg_k8s_response *resp,
                   struct vg_err *err);
void vg_k8s_response_free(struct vg_k8s_response *resp);

/* Like vg_k8s_request, but maps non-2xx to a code and a message naming the
 * method, URL, status and the Status body's message; on success parses the
 * body into *out (if out is not NULL; caller json_object_put's it). */
int vg_k8s_call(struct vg_k8s_client *c, const char *method, const char *path,
                const char *content_type, const char *body, json_object **out, struct vg_err *err);

/* Percent-escapes s for a path segment or query value into buf. */
const char *vg_k8s_escape(const char *s, char *buf, size_t len);

/* ---- API operations (api.c) ---- */

/* out: the object (caller puts). */
int vg_k8s_get_node(struct vg_k8s_client *c, const char *name, json_object **out,
                    struct vg_err *err);
int vg_k8s_get_pod(struct vg_k8s_client *c, const char *ns, const char *name, json_object **out,
                   struct vg_err *err);

/* Merge-patch metadata.annotations (a JSON object; a null value deletes a key).
 * resource_version: if not NULL, a precondition; a stale one gives
 * VG_K8S_ECONFLICT. out (optional): the updated object. A Node's annotations
 * go through its status subresource (nodes/status: the node agent may not
 * patch Nodes), a Pod's through the Pod. */
int vg_k8s_patch_node_annotations(struct vg_k8s_client *c, const char *name,
                                  json_object *annotations, const char *resource_version,
                                  json_object **out, struct vg_err *err);
int vg_k8s_patch_pod_annotations(struct vg_k8s_client *c, const char *ns, const char *name,
                                 json_object *annotations, const char *resource_version,
                                 json_object **out, struct vg_err *err);

/* Read-modify-write with optimistic concurrency (GET the object, PATCH as
 * above: a Node's through nodes/status). fn sees the current object
 * and returns 0 with *annotations set (a new object the helper puts) to patch,
 * 1 for nothing to do, or <0 to abort (it should fill err). On 409 the object
 * is fetched again and fn called again, up to max_attempts times. */
typedef int (*vg_k8s_update_fn)(json_object *current, json_object **annotations, void *arg,
                                struct vg_err *err);
int vg_k8s_update_node_annotations(struct vg_k8s_client *c, const char *name, vg_k8s_update_fn fn,
                                   void *arg, int max_attempts, struct vg_err *err);
int vg_k8s_update_pod_annotations(struct vg_k8s_client *c, const char *ns, const char *name,
                                  vg_k8s_update_fn fn, void *arg, int max_attempts,
                                  struct vg_err *err);

/* GET /api/v1/pods (node_name NULL) or with fieldSelector=spec.nodeName=<node>.
 * out: the PodList (items in "items"); rv: the list's resourceVersion. */
int vg_k8s_list_pods(struct vg_k8s_client *c, const char *node_name, json_object **out, char *rv,
                     size_t rv_len, struct vg_err *err);

/* The same, narrowed by a label selector ("vgpu.io/resize", "a=b,c") when
 * label_selector is not NULL; such a list is served from the API server's
 * watch cache (resourceVersion=0): cheap, and possibly a moment old, so
 * writes based on it must carry the object's resourceVersion. */
int vg_k8s_list_pods_selected(struct vg_k8s_client *c, const char *node_name,
                              const char *label_selector, json_object **out, char *rv,
                              size_t rv_len, struct vg_err *err);

/* Merge-patch a pod's metadata.labels and/or metadata.annotations (either may
 * be NULL; a null value deletes a key) in one request, with an optional
 * resourceVersion precondition (stale: VG_K8S_ECONFLICT). */
int vg_k8s_patch_pod_metadata(struct vg_k8s_client *c, const char *ns, const char *name,
                              json_object *labels, json_object *annotations,
                              const char *resource_version, json_object **out, struct vg_err *err);
/* The same through the pods/status subresource: what vgpu's own components
 * (the node agent, vgpu-scheduler) write, so that their roles need no patch
 * of Pods (whose spec a status write cannot touch; docs/install.md,
 * "Privileges"). Labels and annotations persist there (kube-apiserver keeps
 * only the spec and ownerReferences of such a write). */
int vg_k8s_patch_pod_status_metadata(struct vg_k8s_client *c, const char *ns, const char *name,
                                     json_object *labels, json_object *annotations,
                                     const char *resource_version, json_object **out,
                                     struct vg_err *err);

/* Records a core/v1 Event on pod (the object as read: namespace, name, uid)
 * so that `kubectl describe pod` shows it. type: "Normal" or "Warning";
 * reason: CamelCase; component: who reports it (source.component). */
int vg_k8s_pod_event(struct vg_k8s_client *c, json_object *pod, const char *type,
                     const char *reason, const char *message, const char *component,
                     struct vg_err *err);
/* The same for a pod known by namespace and name alone (no uid: the Event
 * is then matched to the pod by name). */
int vg_k8s_pod_event_named(struct vg_k8s_client *c, const char *ns, const char *name,
                           const char *type, const char *reason, const char *message,
                           const char *component, struct vg_err *err);

/* POST pods/<name>/eviction (policy/v1): the pod is deleted gracefully
 * unless a PodDisruptionBudget forbids it now (429, VG_K8S_EFAIL with the
 * API's message). */
int vg_k8s_evict_pod(struct vg_k8s_client *c, const char *ns, const char *name, struct vg_err *err);

/* POST pods/<name>/binding to node; uid (may be NULL) guards against a
 * re-created pod; annotations (may be NULL) are merged into the pod in the
 * same update. A pod already bound gives VG_K8S_ECONFLICT. */
int vg_k8s_bind_pod(struct vg_k8s_client *c, const char *ns, const char *name, const char *uid,
                    const char *node, json_object *annotations, struct vg_err *err);

/* ---- watch (watch.c) ---- */

enum vg_k8s_event { VG_K8S_ADDED, VG_K8S_MODIFIED, VG_K8S_DELETED, VG_K8S_BOOKMARK, VG_K8S_ERROR };

/* Called per event with the event's object (borrowed). Non-zero stops the
 * watch, which then returns that value. ERROR events other than 410 are passed
 * here too; 410 ends the watch with VG_K8S_EEXPIRED. */
typedef int (*vg_k8s_watch_fn)(enum vg_k8s_event type, json_object *object, void *arg);

struct vg_k8s_watch_opts {
  const char *path;            /* collection, e.g. "/api/v1/pods" (the default if NULL) */
  const char *field_selector;  /* e.g. "spec.nodeName=node1", or NULL */
  int timeout_seconds;         /* server-side timeoutSeconds per stream (default 300) */
  bool bookmarks;              /* allowWatchBookmarks */
  volatile sig_atomic_t *stop; /* set non-zero to end the watch (seen within about 1 s) */
  int max_streams;             /* end (0) after this many streams; 0 = no limit (tests) */
};

/* Watches from *rv (must be a list's resourceVersion; updated with every
 * event, bookmarks included), reconnecting from the last rv whenever the
 * server ends a stream. Returns 0 when stopped, the callback's value if it
 * stopped it, VG_K8S_EEXPIRED on 410 (relist, then watch again), or another
 * error (unreachable, 401, ...). */
int vg_k8s_watch(struct vg_k8s_client *c, const struct vg_k8s_watch_opts *opts, char *rv,
                 size_t rv_len, vg_k8s_watch_fn fn, void *arg, struct vg_err *err);

const char *vg_k8s_event_name(enum vg_k8s_event type);

#endif

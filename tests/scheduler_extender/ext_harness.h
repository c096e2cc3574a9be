/*
 * ext_harness.h -- what the vgpu-scheduler end-to-end tests share: the fake
 * API server (tests/k8s/fake_apiserver.py) and the real vgpu-scheduler binary
 * on free ports, requests over libcurl, builders for Nodes carrying a
 * vgpu.io/gpu-inventory annotation and for Pods, and readers of the
 * extender's answers.
 */
#ifndef VG_EXT_HARNESS_H
#define VG_EXT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "k8s.h"
#include "resize.h"

#define EXT_GIB 1073741824LL

extern struct vg_k8s_client *ext_api; /* admin access to the fake API server */

/* Starts the fake API server and writes a kubeconfig for it; 0 or -1. */
int ext_api_start(void);
void ext_api_stop(void);
/* Starts vgpu-scheduler (--cache-ttl-ms 0) with extra arguments (NULL-ended,
 * may be NULL); 0 or -1. ext_sched_stop(true) kills it with SIGKILL. */
int ext_sched_start(const char *const *extra);
void ext_sched_stop(bool kill9);
/* The port the running scheduler listens on (127.0.0.1), for raw sockets. */
int ext_sched_port(void);
/* The group teardown: stops the scheduler, then the API server. */
int ext_teardown(void **state);

/* Sends body (NULL = GET) to the scheduler; the status, the body in *out. */
long ext_call(const char *path, const char *body, size_t len, char **out);
/* POSTs body, fails the test unless the status is want; the parsed answer. */
json_object *ext_post(const char *path, const char *body, long want);
/* POSTs an object to the fake API server's /_test/ endpoints; a Pod or a
 * Node is waited for until the running scheduler's watch delivered it
 * (only when its watches are up: a test that writes just after starting a
 * scheduler waits for them first, or races the watch). */
void ext_admin(const char *path, const char *body);
/* The running scheduler's watch events so far for resource ("pods",
 * "nodes"), from /metrics; -1 when none runs or its watches are not both up. */
long ext_watch_events(const char *resource);
/* Until that count passes before (-1: at once); fails the test after 10 s. */
void ext_wait_watch_events(const char *resource, long before);
/* Until /metrics says both watches stream (a view cached before that would
 * be dropped when they start, which would pass a test for a wrong reason);
 * fails the test after 10 s. */
void ext_wait_watching(void);
/* GET requests (lists and single reads) the fake API server has served so
 * far (its /_test/requests): what a filter cost in API reads. */
long ext_api_gets(void);
/* Those whose "VERB /path" starts with prefix ("PATCH /api/v1/namespaces/default/pods/a"). */
long ext_api_requests(const char *prefix);

/* The contextReserve (bytes) the next Nodes' inventories carry; 0 by default. */
extern long long ext_context_reserve;
/* A Node whose ngpu GPUs (UUID GPU-<name>-<i>) of mem_gib GiB and model
 * `type` each advertise `resources` (a JSON array's text); GPUs in the
 * unhealthy bit mask are Unhealthy; ngpu 0: no inventory annotation. */
char *ext_node_json(const char *name, int ngpu, int mem_gib, const char *type,
                    const char *resources, unsigned unhealthy);
void ext_add_node(const char *name, int ngpu, int mem_gib, const char *type, const char *resources,
                  unsigned unhealthy);
/* A Pod with one container "main" whose limits are `limits` (the members of
 * a JSON object, e.g. "\"aliyun.com/gpu-mem\":\"4\""), extra annotations
 * (members, or NULL), bound to node (or NULL) with the vgpu.io/assigned
 * value assigned (or NULL). */
char *ext_pod_json(const char *name, const char *limits, const char *annotations, const char *node,
                   const char *assigned);
void ext_add_pod(const char *name, const char *limits, const char *annotations, const char *node,
                 const char *assigned);

/* A Node with one 8 GiB GPU advertising nvidia.com/vgpu (count 4), GPU-<name>-0. */
void ext_add_vgpu_node(const char *name);
/* Warning Events from vgpu-scheduler with this reason, on pod (NULL: any)
 * and whose message contains part (NULL: any); the last one's message into
 * last (may be NULL). */
int ext_events(const char *reason, const char *pod, const char *part, char *last, size_t len);

/* ExtenderArgs with NodeNames (nodeCacheCapable); names: quoted, comma-separated. */
char *ext_args_names(const char *pod, const char *names);
json_object *ext_bind(const char *pod, const char *node);
const char *ext_bind_error(json_object *res);
/* The pod's vgpu.io/assigned value as the API server has it (caller frees), or NULL. */
char *ext_assigned(const char *pod);
/* The pod default/name as the API server has it (caller puts). */
json_object *ext_get_pod(const char *name);
/* Writes a live resize request on pod (container "main"; memory and cores
 * -1 = unchanged), and the node agent's acknowledgement when acked. */
void ext_resize_ask(const char *pod, const char *id, long long memory, int cores, bool acked);
/* The pod's resize status for id within 5 s; fails the test when none comes. */
struct vg_resize_status ext_resize_wait_status(const char *pod, const char *id);

/* node's reason in a filter answer's FailedNodes / FailedAndUnresolvableNodes, or NULL. */
const char *ext_failed_reason(json_object *res, const char *node);
const char *ext_unresolvable_reason(json_object *res, const char *node);
/* node failed, in both maps (kube-scheduler 1.20 reads only FailedNodes),
 * with a reason containing part. */
void ext_expect_refused(json_object *res, const char *node, const char *part);
bool ext_has_name(json_object *res, const char *node);
void ext_expect_contains(const char *s, const char *part);
/* The Score prioritize gave host. */
int ext_score(json_object *list, const char *host);

/* A vgpu.io/assigned value: one container "main" holding memory bytes and
 * cores percent of one GPU (caller frees). */
char *ext_assign1(const char *node, const char *resource, const char *uuid, long long memory,
                  int cores);
/* A running pod on node holding that (ext_assign1). */
void ext_add_holder(const char *pod, const char *node, const char *resource, const char *uuid,
                    long long memory, int cores);
/* A Node with no inventory whose allocatable names nvidia.com/gpu: gpus
 * (NULL: not named, a node without GPUs). */
void ext_add_foreign(const char *name, const char *gpus);
/* A sample's value in a /metrics text, found by its full name and labels
 * (fails the test when there is none). */
double ext_metric(const char *text, const char *series);

#endif

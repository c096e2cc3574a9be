/*
 * extender_int.h -- what the extender's files share (not a public API).
 *
 * The extender is split by concern:
 *   extender_request.c  a Pod -> struct pod_req: each GPU container's dialect,
 *                       amounts and the pod's selection/policy annotations,
 *                       validated (a bad request fails every node, naming
 *                       what is wrong)
 *   extender_view.c     a Node -> struct node_view: its GPUs from the inventory
 *                       annotation minus what the assignments of its pods hold;
 *                       the per-node cache and bind locks
 *   extender_fit.c      GPU-level fit for every dialect, the GPU choice
 *                       (binpack/spread), reasons for misfits, the assignment
 *                       a bind writes, and the node in the placement core's terms
 *   extender_out.c      the answers, written as text; no '%' in any reason
 *   extender_watch.c    watches Pods and Nodes: feeds the store, drops cached
 *                       views that changed
 *   extender_store.c    the Nodes' inventories and the GPU Pods as the watches
 *                       deliver them: views without API requests
 *   extender_batch.c    a name index; the Nodes and Pods listed once for a
 *                       request whose candidates mostly miss the cache
 *   extender_foreign.c  nodes whose nvidia.com/gpu another device plugin
 *                       serves (no inventory): plain whole-GPU pods only
 *   extender.c          the verbs (filter, prioritize, bind), /metrics
 * See docs/scheduler.md.
 */
#ifndef VG_EXTENDER_INT_H
#define VG_EXTENDER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include "assignment.h"
#include "dialect.h"
#include "extender.h"
#include "extender_metrics.h"
#include "resize.h"
#include "textbuf.h"
#include "vg_sched.h"

#define EXT_MAX_CTRS 16
#define EXT_MIB (1024LL * 1024LL)
#define EXT_CCE_UNIT ((int64_t)VG_CCE_UNIT)
#define EXT_CCE_MAX_VGPUS 20 /* CCE's limit when the inventory says none */
#define EXT_MAX_RES 4        /* resources one GPU advertises (one per dialect) */
#define EXT_LIST_MAX 512     /* a type/UUID selection annotation's value */

/* Which fitting GPUs of the chosen node a pod gets: the node policy's own
 * pick (the default: what prioritize scored is what bind writes), or the
 * pod's vgpu.io/gpu-scheduler-policy override. */
enum ext_gpu_policy { EXT_GPU_NODE_POLICY, EXT_GPU_BINPACK, EXT_GPU_SPREAD };

/* ---- a pod's request (extender_request.c) ---- */

/* What the pod's spec says. A count request (VG_ROLE_VGPU_COUNT, VG_ROLE_GPU,
 * VG_ROLE_GPU_SHARED) is vgpu or timeSlicing depending on what the node
 * advertises under that name; the dialect is settled per GPU at fit time. */
enum ext_kind { EXT_KIND_COUNT, EXT_KIND_GPUSHARE, EXT_KIND_CCE };

struct ctr_req {
  char name[VG_ASSIGN_NAME_MAX];
  enum ext_kind kind;
  char resource[VG_SCHED_NAME_MAX]; /* the device-plugin resource its IDs come from */
  int count;                        /* distinct GPUs (1 for gpushare and cce) */
  int64_t units;                    /* gpushare / cce: memory IDs on its GPU */
  int64_t mem;                      /* vgpu: bytes per GPU, 0 = see mem_pct */
  int mem_pct;                      /* vgpu: percent of the GPU, 0 = whole when mem is 0 */
  int cores;                        /* percent per GPU (vgpu gpucores, cce percentage) */
  bool vgpu_only;                   /* asked gpumem/-percentage/gpucores */
};

struct pod_req {
  int n; /* containers asking for GPUs */
  struct ctr_req c[EXT_MAX_CTRS];
  int64_t cpu, mem; /* the pod's requests: milli-cores, MiB (requests.h) */
  /* Selection annotations: comma lists, "" = not set. */
  char use_type[EXT_LIST_MAX], nouse_type[EXT_LIST_MAX];
  char use_uuid[EXT_LIST_MAX], nouse_uuid[EXT_LIST_MAX];
  enum ext_gpu_policy gpu_policy;
  const struct vg_policy *node_policy; /* NULL = the server's --policy */
};

/* The name of role r under vg_ext_set_resource_names' names (what pods ask
 * for and messages say). */
const char *ext_res(enum vg_role r);

/* Parses pod's GPU requests and annotations. Returns 0, or -1 with why. */
int ext_parse_pod(json_object *pod, struct pod_req *r, char *why, size_t len);

/* ---- a node's GPUs (extender_view.c) ---- */

struct res_view {
  char name[VG_SCHED_NAME_MAX];
  enum vg_dialect dialect;
  int count;       /* IDs this GPU advertises for the resource */
  int64_t unit;    /* bytes per ID (gpushare, cce, timeSlicing "equal") */
  int64_t memory;  /* vgpu: bytes its slices may add up to */
  int cores;       /* vgpu: percent its slices may add up to */
  int max_vgpus;   /* cce: slices per GPU */
  int ids_used;    /* IDs held by assignments naming this resource */
  int slices_used; /* assignment entries naming this resource */
};

enum ext_cce_mode { EXT_CCE_NONE, EXT_CCE_MEM, EXT_CCE_MEM_CORES };

struct gpu_view {
  char uuid[VG_ASSIGN_UUID_MAX];
  char type[64];
  int index;
  bool healthy;
  int64_t mem, mem_used; /* bytes: the device, and what all slices hold */
  int cores_used;        /* percent held by all slices */
  int slices;            /* assignment entries on this GPU, any resource */
  bool exclusive;        /* holds a 100 % cores slice */
  enum ext_cce_mode cce_mode;
  int nres;
  struct res_view res[EXT_MAX_RES];
};

struct node_view {
  int n;
  int64_t reserve; /* bytes: the inventory's contextReserve, kept free per slice (fit) */
  /* CPU (milli-cores) and memory (MiB): the Node's allocatable (-1: not
   * reported) and what the pods bound to it request, as kube-scheduler
   * counts them (requests.h); the placement core scores with them. */
  int64_t cpu_alloc, mem_alloc, cpu_req, mem_req;
  /* A foreign GPU node (extender_foreign.c): no inventory, n == 0; its
   * allocatable nvidia.com/gpu and what its pods request of it. */
  bool foreign;
  int64_t gpu_alloc, gpu_req;
  struct gpu_view g[VG_SCHED_MAX_GPUS];
};

struct node_entry {
  char name[VG_SCHED_NAME_MAX * 2];
  /* What the last view read counted in x->gaps (its GPUs' free milli), and
   * its GPU model in x->models (-1: none); under x->lock. */
  short gaps[VG_SCHED_MAX_GPUS];
  int ngaps, model;
  pthread_mutex_t bind_lock; /* one bind at a time per node */
  struct timespec at;        /* when view was read; 0 = never/stale */
  unsigned gen; /* bumped by every invalidation: a read begun before one is not cached */
  int rc;       /* EXT_R_NONE, or the class of why the view is unusable (why) */
  char why[256];
  char *inventory; /* the annotation text view was built from, or NULL */
  /* Our own binds to this node the watch has not delivered yet: until it
   * has (or pending_until passes), the store lacks them and a view is read
   * from the API instead (read-your-writes; under x->lock). */
  int pending;
  struct timespec pending_until;
  struct node_view view;
  struct node_entry *next;   /* all entries (for freeing) */
  struct node_entry *bucket; /* next in its hash bucket */
};

#define EXT_BUCKETS 4096 /* node entries are looked up once per candidate per verb */

struct ext_watch;       /* extender_watch.c */
struct ext_store;       /* extender_store.c */
struct ext_pending;     /* extender_view.c */
struct ext_reservation; /* extender_reserve.c */

/* ---- the watch-fed store (extender_store.c) ---- */

struct ext_store *ext_store_new(void); /* NULL: out of memory */
void ext_store_free(struct ext_store *s);
/* Replaces every Pod (pods) or every Node with a list's items; their count. */
int ext_store_reset(struct ext_store *s, bool pods, json_object *list);
/* One watch event's object (deleted: a DELETED event). True when a view can
 * change; changed[] then names the nodes whose views do ("" = none). */
bool ext_store_apply(struct ext_store *s, bool pod, bool deleted, json_object *obj,
                     char changed[2][VG_SCHED_NAME_MAX * 2]);
/* Drops the Pod obj names if the store still holds obj itself for it (not
 * a newer object); true when it did. */
bool ext_store_drop_if(struct ext_store *s, json_object *obj);
/* The readers below run between ext_store_read and ext_store_done (a read
 * lock); what they lend lives until ext_store_done. */
void ext_store_read(struct ext_store *s);
void ext_store_done(struct ext_store *s);
/* Does the Node exist? *inventory: its inventory text, or NULL; *base: the
 * view parsed from it (only its n GPUs are there: ext_view_copy it), or NULL
 * with *why saying why it is unusable and *rc its class; *why NULL: not
 * parsed, parse *inventory. */
bool ext_store_node(struct ext_store *s, const char *name, const char **inventory,
                    const struct node_view **base, enum ext_reason *rc, const char **why);
/* The node's allocatable (when the Node reports it) and its pods' CPU,
 * memory and nvidia.com/gpu requests into v's cpu_*, mem_* and gpu_req. */
void ext_store_cpu_mem(struct ext_store *s, const char *name, struct node_view *v);
/* The Node's allocatable nvidia.com/gpu, -1 when it names none. */
int64_t ext_store_gpu_alloc(struct ext_store *s, const char *name);
/* fn for each Pod bound to the node that may hold GPUs there (it carries
 * vgpu.io/assigned or requests nvidia.com/gpu), with its
 * vgpu.io/assigned parsed as the event came (has, a, error: as
 * vg_assign_from_pod returns them). */
typedef void (*ext_store_pod_fn)(void *ctx, json_object *pod, int has,
                                 const struct vg_assignment *a, const char *error);
void ext_store_pods(struct ext_store *s, const char *name, ext_store_pod_fn fn, void *ctx);
/* "namespace/name" of pod into key (what binds mark pending); false when
 * it has no name. */
bool ext_pod_key(json_object *pod, char *key, size_t len);
/* The names of the Nodes (*names and each name: caller frees); how many.
 * Takes the read lock itself. */
size_t ext_store_names(struct ext_store *s, char ***names);

/* ---- names and batched reads (extender_batch.c) ---- */

/* A string -> int hash index; keys are borrowed (must outlive it). */
struct ext_index {
  size_t mask;
  const char **keys;
  int *vals;
};
uint32_t ext_hash(const char *s); /* FNV-1a */
/* Room for n keys; 0, or -1 when out of memory. */
int ext_index_init(struct ext_index *ix, size_t n);
void ext_index_free(struct ext_index *ix);
/* key's value; when key is new it is inserted with val (returned). */
int ext_index_put(struct ext_index *ix, const char *key, int val);
int ext_index_get(const struct ext_index *ix, const char *key); /* -1: absent */

/* The Nodes and the Pods of the cluster, listed once for one request. */
struct ext_batch {
  bool ok;            /* fetched: views are built from these lists */
  unsigned drops;     /* x->drops before the lists were read */
  json_object *nodes; /* NodeList, NULL when the request carried the Nodes */
  json_object *pods;  /* PodList */
  struct ext_index node_names, pod_nodes;
  int *pod_first, *pod_next; /* per pod_nodes group: a chain of items indexes */
};
/* Candidates a request reads at least this many views for go through one
 * batch instead of two API requests each. */
#define EXT_BATCH_MIN 16
/* Lists the Pods, and the Nodes when nodes; 0, or -1 with err. */
int ext_batch_fetch(struct vg_ext *x, bool nodes, struct ext_batch *b, struct vg_err *err);
void ext_batch_free(struct ext_batch *b);
json_object *ext_batch_node(const struct ext_batch *b, const char *name); /* NULL: none */
/* The first of node's pods (an index into *items, the PodList's), -1: none;
 * ext_batch_next gives the next, -1 after the last. */
int ext_batch_pods(const struct ext_batch *b, const char *node, json_object **items);
int ext_batch_next(const struct ext_batch *b, int pod);

struct vg_ext {
  struct vg_k8s_client *client;
  struct vg_assign_key *akey; /* borrowed; NULL: assignments are written unsigned */
  const struct vg_policy *policy;
  struct ext_learner *learner; /* the target workload (extender_workload.c) */
  /* Under lock: the GPU model names seen in inventories (no nodes; at most
   * EXT_MAX_MODELS), and how many GPUs of the views read have each free
   * share (0..1000 milli), the vgpu policy's Sum-of-Squares input. */
  struct vg_cluster models;
  int gaps[VG_MILLI + 1];
  long ttl_ms;
  struct ext_watch *watch; /* NULL unless vg_ext_watch_start */
  /* Binds waiting for their watch event (node_entry.pending), under lock. */
  struct ext_pending *pending;
  int npending, cap_pending;
  /* What prioritize reserved on the node it ranked first, under lock. */
  struct ext_reservation *reserved;
  int nreserved, cap_reserved;
  struct ext_resizer *resizer; /* NULL unless vg_ext_resize_start */
  pthread_mutex_t lock;        /* nodes list, buckets and cached views */
  struct node_entry *nodes;
  struct node_entry *buckets[EXT_BUCKETS];
  unsigned drops; /* views dropped so far: a batch read before a drop is not cached */
  /* Pods whose vgpu.io/assigned was found unreadable ("ns/name/uid"), so
   * that each is logged once (extender_view.c). At most EXT_BAD_PODS_MAX
   * are remembered; beyond that each further one is logged every read. */
  struct ext_index bad_pods;
  int nbad_pods;
  struct ext_metrics m;   /* under lock */
  bool foreign_gpu_nodes; /* --foreign-gpu-nodes allow (extender_foreign.c) */
};

/* The entry for name, or NULL (creates none). Lock held. */
struct node_entry *ext_find_entry(struct vg_ext *x, const char *name);
/* The node entry (cache slot and bind lock) for name, created when new; NULL
 * when out of memory. */
struct node_entry *ext_entry(struct vg_ext *x, const char *name);
/* Where a view may come from: a cached one (filter, prioritize); the
 * store when the watches are synced and it holds every bind of ours to the
 * node, else the API (bind: ext_pending_add puts our binds in the store);
 * the API only (resize). */
enum ext_fresh { EXT_CACHED, EXT_CURRENT, EXT_FROM_API };
/* The node's GPU view: from node_obj when given (a full NodeList), else as
 * fresh says. Returns EXT_R_NONE (0), or the failure's class with why. */
enum ext_reason ext_node_view(struct vg_ext *x, const char *name, json_object *node_obj,
                              enum ext_fresh fresh, struct node_view *v, char *why, size_t len);
/* Bind's view of node name: from the store while the watches are synced
 * and it holds every bind of ours to the node, without the pod exclude
 * ("ns/name": the pod being bound, whose reservation is there); else from
 * the API. Never cached. EXT_R_NONE, or the failure's class with why. */
enum ext_reason ext_bind_view(struct vg_ext *x, const char *name, const char *exclude,
                              struct node_view *v, char *why, size_t len);
/* As ext_node_view, but instead of copying the view out, calls use(ctx, v)
 * with it (only when EXT_R_NONE is returned). A cached view is lent under the cache
 * lock: use must be quick and must not call back into the extender. Filter
 * and prioritize read every candidate this way; copying ~4 kB per node per
 * request was a tenth of their time. */
typedef void (*ext_view_fn)(void *ctx, const struct node_view *v);
/* batch: when not NULL and fetched, a view not cached is built from its
 * lists instead of the API. */
enum ext_reason ext_with_view(struct vg_ext *x, const char *name, json_object *node_obj,
                              const struct ext_batch *batch, enum ext_fresh fresh, ext_view_fn use,
                              void *ctx, char *why, size_t len);
/* Would ext_with_view (not fresh) find name's view in the cache now? */
bool ext_view_cached(struct vg_ext *x, const char *name, json_object *node_obj);
void ext_invalidate(struct vg_ext *x, const char *name);
/* Drops every cached view (a watch came up, or went down: events missed). */
void ext_invalidate_all(struct vg_ext *x);
/* Drops name's view if it has one; creates no entry (watch events name
 * nodes this scheduler may never be asked about). */
void ext_invalidate_known(struct vg_ext *x, const char *name);
/* How long a cached view may be used now (extender_watch.c): --cache-ttl-ms,
 * or, while both watches are synced, until an event drops it (any TTL, 0
 * included: see docs/scheduler.md, "Freshness"). Lock held. */
long ext_view_ttl_ms(const struct vg_ext *x);
/* The store, when both watches are synced (its views are current as of the
 * last event); else NULL. Lock held. */
struct ext_store *ext_synced_store(const struct vg_ext *x);
/* The same, taking the lock itself. */
struct ext_store *ext_current_store(struct vg_ext *x);
/* Read-your-writes for our binds: pod ("ns/name") was bound to e's node
 * (ext_pending_add, with obj: the Pod as bound, which the caller has put in
 * the store; NULL: it is not there, and e's views are read from the API
 * until its event comes), its watch event arrived bound to node
 * (ext_pending_seen), or the bind failed (ext_pending_seen, node = e's).
 * ext_pending_reapply puts the bound Pods back into a store a relist
 * reset: the list may predate the bind. */
#define EXT_POD_KEY_MAX 320  /* "namespace/name": 63 + 1 + 253 bytes and the NUL */
#define EXT_PENDING_MS 30000 /* the most a bind is waited for: then the store is trusted */
void ext_pending_add(struct vg_ext *x, struct node_entry *e, const char *pod, json_object *obj);
void ext_pending_reapply(struct vg_ext *x, struct ext_store *store);
void ext_pending_free(struct vg_ext *x); /* vg_ext_free */
void ext_pending_seen(struct vg_ext *x, const char *pod, const char *node);
/* Copies a view: the header and its n GPUs only (most nodes have far fewer
 * than VG_SCHED_MAX_GPUS; whole-struct copies dominated filter's time). */
void ext_view_copy(struct node_view *dst, const struct node_view *src);
/* Adds one slice (resource, bytes, percent) to g's account: what an
 * assignment entry holds, and what fit takes when it places a container. */
void ext_gpu_hold(struct gpu_view *g, const char *resource, int64_t memory, int cores);
/* Notes a pod whose assignment is unreadable (key: "ns/name/uid"): true
 * the first time (log it then), and counted in /metrics. */
bool ext_note_bad_pod(struct vg_ext *x, const char *key);
void ext_forget_bad_pods(struct vg_ext *x); /* vg_ext_free */
#define EXT_BAD_PODS_MAX 4096
/* The view of a Node with this inventory text and no pods, sized to its
 * GPUs (free it); NULL with why and its class *rc when unusable. */
struct node_view *ext_base_view(const char *inventory, enum ext_reason *rc, char *why, size_t len);
/* What a pod's parsed vgpu.io/assigned (has, a, error: as vg_assign_from_pod
 * gives them) holds on v; an unreadable one as extender_view.c says. */
void ext_hold_assignment(struct vg_ext *x, const char *node, json_object *pod, int has,
                         const struct vg_assignment *a, const char *error, struct node_view *v);
/* The inventory annotation's text (k8s/gpu_inventory.h reads it) -> v
 * (nothing used yet). EXT_R_NONE, or EXT_R_BAD_INVENTORY with why. */
enum ext_reason ext_parse_inventory(const char *text, struct node_view *v, char *why, size_t len);

/* Prioritize answers each node's rank by the policy's score times this:
 * kube-scheduler multiplies it by 10 (MaxNodeScore / MaxExtenderPriority)
 * and the weight, so one rank is 1,000 points, more than kube-scheduler's
 * default score plugins can add between two nodes (at most 900;
 * NodePreferAvoidPods, an operator's explicit wish, aside). */
#define EXT_RANK_STEP 100

/* ---- between prioritize and bind (extender_reserve.c) ---- */

/* A deep copy of pod bound to node, with annotations (an object, or NULL)
 * added; NULL when pod has no spec or out of memory. */
json_object *ext_pod_as_bound(json_object *pod, const char *node, json_object *annotations);
/* The annotations bind writes for an assignment (the vgpu.io/assigned
 * object): {vgpu.io/assigned: its compact JSON text}. */
json_object *ext_assigned_annotations(json_object *assignment);
/* Adds vgpu.io/assigned-mac for the vgpu.io/assigned text in annotations,
 * bound to the pod (uid, ns, name) and node (assignment_mac.h), when the
 * extender has a key. 0, or -1 with why (the key file cannot be read: the
 * bind or resize must not be written unsigned, which every agent refuses). */
int ext_sign_annotations(struct vg_ext *x, json_object *annotations, const char *uid,
                         const char *ns, const char *name, const char *node, char *why, size_t len);
/* For a pod asking for gpushare memory (VG_ROLE_GPUSHARE_MEM), adds Aliyun gpushare's five
 * annotations (assignment.h) to ann, the ones bind writes
 * (extender_aliyun.c); nothing for other pods. v: the node's view the
 * assignment was made on. */
void ext_aliyun_annotations(json_object *ann, const struct pod_req *req, const struct node_view *v,
                            json_object *assignment);
/* Puts pod into the store as bound to node with annotations (as
 * ext_assigned_annotations makes them), until its bind or EXT_RESERVE_MS. */
void ext_reserve(struct vg_ext *x, json_object *pod, const char *node, json_object *annotations);
/* Drops the reservation of pod key ("namespace/name"), if any. */
void ext_unreserve(struct vg_ext *x, const char *key);
void ext_reservations_free(struct vg_ext *x); /* vg_ext_free */

/* ---- foreign GPU nodes (extender_foreign.c) ---- */

/* The resource another device plugin serves on a foreign GPU node: NVIDIA's
 * own name, which our --resource renames do not change. */
#define EXT_FOREIGN_RESOURCE vg_resource_name(NULL, VG_ROLE_GPU)
/* How every reason for a foreign node begins; its %s is EXT_FOREIGN_RESOURCE. */
#define EXT_FOREIGN_WHY \
  "no " VG_INVENTORY_ANNOTATION " on this node (its %s come from another device plugin)"
/* v: a foreign node's view offering gpus (its allocatable), nothing requested. */
void ext_foreign_view(struct node_view *v, int64_t gpus);
/* Does r fit foreign node v? Only pods whose GPU ask is whole nvidia.com/gpu
 * and within what the node's pods have not requested: EXT_R_NONE, else
 * EXT_R_FOREIGN_ASK or EXT_R_FOREIGN_FULL with why. */
enum ext_reason ext_foreign_misfit(const struct pod_req *r, const struct node_view *v, char *why,
                                   size_t len);
/* The same as a yes or no (false with why). */
bool ext_foreign_fits(const struct pod_req *r, const struct node_view *v, char *why, size_t len);
/* The nvidia.com/gpu r asks for, over its containers. */
int64_t ext_foreign_ask(const struct pod_req *r);
/* Is r's GPU ask whole nvidia.com/gpu alone, which another device plugin may
 * serve (no vgpu resource, no GPU selection)? */
bool ext_plain_gpus(const struct pod_req *r);

/* ---- the learned target workload (extender_workload.c) ---- */

struct ext_learner;
struct ext_learner *ext_learner_new(double half_life_pods, double prior_pods); /* NULL: no memory */
void ext_learner_free(struct ext_learner *l);
/* Counts pod p (core form) once per uid; true when it was new. */
bool ext_learner_observe(struct ext_learner *l, const char *uid, const struct vg_pod *p);
/* A copy of the current workload (free it with vg_workload_free). */
int ext_learner_workload(struct ext_learner *l, struct vg_workload *w, struct vg_err *err);
long long ext_learner_seen(struct ext_learner *l);
/* GET /workload's body: the types, their weights and the measure chosen. */
char *ext_learner_json(struct ext_learner *l, const char (*models)[VG_SCHED_NAME_MAX], int nmodels);

/* ---- the placement core's model of the candidates (extender_score.c) ---- */

#define EXT_MAX_MODELS 31 /* model bit 31 means "selects no known model" */
struct ext_model {
  struct vg_cluster cl; /* the scored nodes, and x's model table */
  struct vg_workload w; /* the learned workload, as of ext_model_begin */
  int gaps[VG_MILLI + 1];
  uint32_t models; /* the pod's model mask */
  struct vg_sched s;
  bool sched_ready;
  int sched_nodes; /* the nodes s was made for */
};
/* Snapshots what scoring r reads (workload, models, gaps); 0 or -1 with err. */
int ext_model_begin(struct vg_ext *x, const struct pod_req *r, struct ext_model *m,
                    struct vg_err *err);
/* Adds the node called name, in core form (ext_to_core); its index or -1. */
int ext_model_add(struct vg_ext *x, struct ext_model *m, const char *name,
                  const struct vg_node *core, struct vg_err *err);
/* The policy's score for p on node i and its GPU pick; NAN when p does not
 * fit there (CPU, memory, model or GPUs) or scoring cannot start. */
double ext_model_score(struct ext_model *m, const struct vg_policy *pol, int i, struct vg_pod *p,
                       struct vg_pick *pick, struct vg_err *err);
void ext_model_end(struct ext_model *m);
/* A view of e was read (usable or not): its GPUs replace e's old ones in
 * x->gaps, and its model is registered. Lock held. */
void ext_gaps_note(struct vg_ext *x, struct node_entry *e, const struct node_view *v, bool usable);

/* ---- fit (extender_fit.c) ---- */

/* picks[i][k]: view index of container i's k-th GPU. */
typedef int ext_picks[EXT_MAX_CTRS][VG_SCHED_MAX_GPUS];

/* Places every container in turn (each sees what the earlier ones took; v
 * itself is not changed): EXT_R_NONE, or when one does not fit the class of
 * the first misfit with why. */
enum ext_reason ext_pod_misfit(const struct pod_req *r, const struct node_view *v, ext_picks picks,
                               char *why, size_t len);
/* The same as a yes or no (false with why). */
bool ext_pod_fits(const struct pod_req *r, const struct node_view *v, ext_picks picks, char *why,
                  size_t len);
/* A pod whose assignment cannot be read: each container's request taken
 * from every GPU of v that could serve it (extender_view.c says why). */
void ext_hold_anywhere(const struct pod_req *r, struct node_view *v);
/* The vgpu.io/assigned object for a placement ext_pod_fits found on v. */
json_object *ext_assignment(const char *node, const struct pod_req *r, const struct node_view *v,
                            ext_picks picks, struct vg_err *err);
/* The node and pod in the placement core's terms (for scoring). A pod with
 * several GPU containers is scored as its largest one, on the node after the
 * others are placed. */
void ext_to_core(const struct node_view *v, const struct pod_req *r, struct vg_node *n,
                 struct vg_pod *p);

/* A GPU's free share in the core's milli-GPU: the smaller of its free
 * cores and free memory fractions; 0 when it cannot take a slice. */
int ext_free_milli(const struct gpu_view *g);
/* The core's model mask (vg_pod.models) for q's GPU type selection over the
 * model names; 0 without one. */
uint32_t ext_models_mask(const struct pod_req *q, const char (*models)[VG_SCHED_NAME_MAX],
                         int nmodels);
/* Takes the node policy's pick (core GPU k = view GPU k) for r's one GPU
 * container into picks, when r leaves the choice to the node policy and
 * every picked GPU passes the fit above; false (picks untouched) else. */
bool ext_adopt_pick(const struct pod_req *r, const struct node_view *v, const struct vg_pick *pick,
                    ext_picks picks);
/* CPU or memory of a Node that reports no allocatable: unlimited for scoring. */
#define EXT_UNREPORTED (INT64_MAX / 4)

/* Can container c of a pod bound to v take the amounts q asks for, on the
 * same GPUs? v holds c's current slices; false with why (the GPU and what is
 * short) when not. */
bool ext_resize_fits(const struct node_view *v, const struct vg_assign_ctr *c,
                     const struct vg_resize_request *q, char *why, size_t len);

/* ---- answers (extender_out.c) ---- */

/* The buffer the answers are written into (textbuf.h); {0} is empty.
 * Running out of memory is sticky: ext_out_take then returns NULL. */
struct ext_out {
  struct vg_textbuf t;
};
void ext_out_raw(struct ext_out *o, const char *s, size_t n);
void ext_out_lit(struct ext_out *o, const char *s);
void ext_out_str(struct ext_out *o, const char *s); /* a JSON string, quoted and escaped */
/* A reason or error text as a JSON string, every '%' written as "percent":
 * the one way such texts leave the extender (see extender_out.c). */
void ext_out_reason(struct ext_out *o, const char *s);
void ext_out_int(struct ext_out *o, long long v);
/* The text (caller frees), or NULL after running out of memory; o is reset. */
char *ext_out_take(struct ext_out *o);

/* ---- GPU pods that never reach vgpu-scheduler (extender_unrouted.c) ---- */

#define EXT_UNROUTED_SEEN 1024 /* UIDs remembered */
#define EXT_UNROUTED_RATE 5.0  /* Events a second, and the burst */
struct ext_unrouted {
  char seen[EXT_UNROUTED_SEEN][64]; /* UIDs already said so, a ring */
  int next;
  double tokens, last; /* the rate limit: tokens left, when last filled (s) */
  unsigned long dropped;
};
/* An unbound Pending pod that asks for GPUs, names another scheduler and did
 * not opt out (vgpu.io/scheduler: skip, label vgpu.io/admission=ignore,
 * vgpu-system, kube-system): true with why (what the Event says). Pure. */
bool ext_unrouted_why(json_object *pod, char *why, size_t len);
/* ---- Events on pods, posted off the watch's thread (extender_notice.c) ---- */

#define EXT_NOTICE_QUEUE 64 /* notices waiting to be posted; more are dropped */
struct ext_notice {
  char ns[254], name[254], uid[64], reason[32], message[512];
};
struct ext_notices {
  struct vg_k8s_client *client;
  pthread_mutex_t lock; /* the rest */
  pthread_cond_t cond;
  struct ext_notice items[EXT_NOTICE_QUEUE]; /* a ring */
  int head, count;
  bool stop, started;
  unsigned long dropped; /* the queue was full */
  pthread_t thread;
};
/* Starts the thread that posts queued notices (0, or -1 with err). */
int ext_notices_start(struct ext_notices *q, struct vg_k8s_client *client, struct vg_err *err);
/* Stops it; notices still queued are not posted. */
void ext_notices_stop(struct ext_notices *q);
/* Queues a Warning Event reason/message on pod, without waiting; false when
 * the queue is full (counted in q->dropped) or the pod has no name. */
bool ext_notice_pod(struct ext_notices *q, json_object *pod, const char *reason,
                    const char *message);

/* Queues the Warning Event NotRouted on such a pod, once per UID and at most
 * EXT_UNROUTED_RATE a second. u: the pod watch's own (one thread). */
void ext_unrouted_note(struct ext_notices *q, struct ext_unrouted *u, json_object *pod);

/* ---- small JSON helpers (extender_request.c) ---- */
json_object *ext_get(json_object *o, const char *key);
const char *ext_get_str(json_object *o, const char *key);

#endif

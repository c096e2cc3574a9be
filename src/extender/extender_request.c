/*
 * extender_request.c -- what a Pod asks for, in every dialect (docs/configuration.md),
 * as one struct pod_req the fit code understands.
 *
 * Resource names are looked up by role in common/dialect.h's table, under the
 * names this vgpu-scheduler was given (--resource, vg_ext_set_resource_names:
 * the device plugin's renames). Per container (limits win over requests, as
 * the kubelet does):
 *   vgpu          VG_ROLE_VGPU_COUNT (or VG_ROLE_GPU) N GPUs, with optional
 *                 memory in MiB (VG_ROLE_VGPU_MEM) or percent
 *                 (VG_ROLE_VGPU_MEM_PCT) and cores in percent (VG_ROLE_VGPU_CORES)
 *   timeSlicing   VG_ROLE_GPU or VG_ROLE_GPU_SHARED: N replicas
 *   gpushare      VG_ROLE_GPUSHARE_MEM: N memory units on one GPU
 *   cce           VG_ROLE_CCE_MEM: N units of 128 MiB on one GPU, with
 *                 optional VG_ROLE_CCE_CORES
 * VG_ROLE_GPU is vgpu or timeSlicing by what the node advertises under
 * that name, so the dialect of a count request is settled at fit time.
 *
 * Everything is validated here, before any node is looked at: a request that
 * no node could ever satisfy the way it is written (two dialects in one
 * container, CCE cores not a multiple of 5, a CCE memory of 0, a fraction
 * of a unit, ...) is refused with one reason naming the container, the
 * resource and the rule -- every node failed with it (extender.c: an answer
 * of 200, since kube-scheduler drops the body of any other) -- not a list
 * of "does not fit" reasons on every node.
 *
 * Pod annotations: GPU type / UUID selection (vgpu.io/use-gputype, ... and
 * HAMi's nvidia.com/ names as aliases) and the per-pod policy overrides
 * (vgpu.io/node-scheduler-policy, vgpu.io/gpu-scheduler-policy; hami.io/
 * aliases).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender_int.h"
#include "json_get.h"
#include "pod_quantity.h"
#include "requests.h"

/* The names of each role (dialect.h), set once before serving; the defaults until then. */
static const struct vg_resource_names *g_names;

void vg_ext_set_resource_names(const struct vg_resource_names *names) { g_names = names; }

const char *ext_res(enum vg_role r) { return vg_resource_name(g_names, r); }

#define R_VGPU ext_res(VG_ROLE_VGPU_COUNT)
#define R_GPU ext_res(VG_ROLE_GPU)
#define R_GPU_SHARED ext_res(VG_ROLE_GPU_SHARED)
#define R_MEM ext_res(VG_ROLE_VGPU_MEM)
#define R_MEM_PCT ext_res(VG_ROLE_VGPU_MEM_PCT)
#define R_CORES ext_res(VG_ROLE_VGPU_CORES)
#define R_GPUSHARE ext_res(VG_ROLE_GPUSHARE_MEM)
#define R_CCE_MEM ext_res(VG_ROLE_CCE_MEM)
#define R_CCE_CORES ext_res(VG_ROLE_CCE_CORES)
#define MAX_AMOUNT 1000000LL /* bigger than any GPU's IDs; keeps arithmetic in range */

json_object *ext_get(json_object *o, const char *key) { return vg_json_get(o, key); }

const char *ext_get_str(json_object *o, const char *key) { return vg_json_get_str(o, key); }

/* A resource's value (key has role `role`) as a whole number
 * (pod_quantity.h): a MiB role in MiB, the rest as counts. Capped so that no
 * later product overflows. */
static int amount(const char *ctr, const char *key, enum vg_role role, json_object *val,
                  int64_t *out, char *why, size_t len) {
  struct vg_err err = {{0}};
  const struct vg_role_info *info = vg_role_info(role);
  const char *unit = info->unit_text;
  if (vg_pod_quantity(val, info->unit == VG_UNIT_MIB ? VG_QTY_MIB : VG_QTY_COUNT, out, &err) != 0) {
    snprintf(why, len, "container %s: %s%s: %s", ctr, key, unit, err.msg);
    return -1;
  }
  if (*out > MAX_AMOUNT) {
    snprintf(why, len, "container %s: %s%s is %lld, more than %lld (no GPU has that many)", ctr,
             key, unit, (long long)*out, MAX_AMOUNT);
    return -1;
  }
  return 0;
}

/* One container's GPU resources, gathered before the rules are checked. */
struct seen {
  const char *count_res; /* the name of a VG_ROLE_VGPU_COUNT, _GPU or _GPU_SHARED */
  int64_t count, mem_mib, mem_pct, cores, gpushare, cce_mem, cce_cores;
  bool has_mem, has_pct, has_cores, has_gpushare, has_cce_mem, has_cce_cores;
};

static bool is_ours(const char *key) {
  static const char *const prefixes[] = {"nvidia.com/", "vgpu.io/", "aliyun.com/", "volcano.sh/"};
  for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
    if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0) return true;
  return false;
}

static int take_key(const char *ctr, const char *key, json_object *val, struct seen *s, char *why,
                    size_t len) {
  int64_t q;
  int role = vg_resource_role(g_names, key);
  bool count_key = role == VG_ROLE_VGPU_COUNT || role == VG_ROLE_GPU || role == VG_ROLE_GPU_SHARED;
  if (count_key && s->count_res && strcmp(s->count_res, key) != 0) {
    snprintf(why, len, "container %s asks for both %s and %s; one GPU resource per container", ctr,
             s->count_res, key);
    return -1;
  }
  struct {
    enum vg_role role;
    int64_t *dst;
    bool *has;
  } map[] = {{VG_ROLE_VGPU_MEM, &s->mem_mib, &s->has_mem},
             {VG_ROLE_VGPU_MEM_PCT, &s->mem_pct, &s->has_pct},
             {VG_ROLE_VGPU_CORES, &s->cores, &s->has_cores},
             {VG_ROLE_GPUSHARE_MEM, &s->gpushare, &s->has_gpushare},
             {VG_ROLE_CCE_MEM, &s->cce_mem, &s->has_cce_mem},
             {VG_ROLE_CCE_CORES, &s->cce_cores, &s->has_cce_cores}};
  int64_t *dst = count_key ? &s->count : NULL;
  bool *has = NULL;
  for (size_t i = 0; !dst && i < sizeof(map) / sizeof(map[0]); i++)
    if (role == (int)map[i].role) dst = map[i].dst, has = map[i].has;
  if (!dst) {
    if (!is_ours(key)) return 0; /* cpu, memory, other vendors: the stock scheduler's */
    snprintf(why, len,
             "container %s: resource %s is not supported by vgpu-scheduler (known: %s, %s, %s, "
             "%s, %s, %s, %s, %s, %s)",
             ctr, key, R_VGPU, R_GPU, R_GPU_SHARED, R_MEM, R_MEM_PCT, R_CORES, R_GPUSHARE,
             R_CCE_MEM, R_CCE_CORES);
    return -1;
  }
  if (amount(ctr, key, (enum vg_role)role, val, &q, why, len) != 0) return -1;
  *dst = q;
  if (has) *has = true;
  if (count_key) s->count_res = key;
  return 0;
}

/* The dialects present: vgpu-ish (count and its modifiers), gpushare, cce. */
static int check_one_dialect(const char *ctr, const struct seen *s, char *why, size_t len) {
  const char *names[3] = {NULL, NULL, NULL};
  int n = 0;
  if (s->count_res || s->has_mem || s->has_pct || s->has_cores)
    names[n++] = s->count_res ? s->count_res : R_MEM;
  if (s->has_gpushare) names[n++] = R_GPUSHARE;
  if (s->has_cce_mem || s->has_cce_cores) names[n++] = R_CCE_MEM;
  if (n < 2) return 0;
  snprintf(why, len, "container %s mixes dialects (%s and %s); one dialect per container", ctr,
           names[0], names[1]);
  return -1;
}

static int build_count(struct ctr_req *c, const struct seen *s, char *why, size_t len) {
  bool vgpu = s->has_mem || s->has_pct || s->has_cores;
  if (vgpu && (!s->count_res || s->count == 0)) {
    snprintf(why, len, "container %s: %s/%s/%s need %s (or %s) > 0", c->name, R_MEM, R_MEM_PCT,
             R_CORES, R_VGPU, R_GPU);
    return -1;
  }
  if (vgpu && vg_resource_role(g_names, s->count_res) == VG_ROLE_GPU_SHARED) {
    snprintf(why, len, "container %s: %s is time-slicing, which takes no %s/%s/%s", c->name,
             R_GPU_SHARED, R_MEM, R_MEM_PCT, R_CORES);
    return -1;
  }
  if (s->has_mem && s->has_pct) {
    snprintf(why, len, "container %s: give %s or %s, not both", c->name, R_MEM, R_MEM_PCT);
    return -1;
  }
  if (s->has_mem && s->mem_mib == 0) {
    snprintf(why, len, "container %s: %s is 0", c->name, R_MEM);
    return -1;
  }
  if (s->has_pct && (s->mem_pct < 1 || s->mem_pct > 100)) {
    snprintf(why, len, "container %s: %s is %lld, must be 1..100", c->name, R_MEM_PCT,
             (long long)s->mem_pct);
    return -1;
  }
  if (s->cores > 100) {
    snprintf(why, len, "container %s: %s is %lld, at most 100 (percent of one GPU)", c->name,
             R_CORES, (long long)s->cores);
    return -1;
  }
  c->kind = EXT_KIND_COUNT;
  c->count = (int)s->count;
  c->mem = s->mem_mib * EXT_MIB;
  c->mem_pct = (int)s->mem_pct;
  c->cores = (int)s->cores;
  c->vgpu_only = vgpu;
  snprintf(c->resource, sizeof(c->resource), "%s", s->count_res);
  return 0;
}

static int build_cce(struct ctr_req *c, const struct seen *s, char *why, size_t len) {
  /* Seed 004: CCE takes the memory as "a positive integer" of 128 MiB
   * units. A 0 is not "no GPU" as it is for the other dialects: the pod
   * still names the resource, so kube-scheduler sends it here, and placing
   * it nowhere in silence would leave the user guessing. (Negative and
   * fractional values never get this far: amount() refuses them.) */
  if (s->has_cce_mem && s->cce_mem == 0) {
    snprintf(why, len,
             "container %s: %s is 0; CCE requires a positive integer number of 128 MiB units",
             c->name, R_CCE_MEM);
    return -1;
  }
  if (!s->has_cce_mem) {
    snprintf(why, len, "container %s: %s needs %s > 0 (CCE: compute only with memory)", c->name,
             R_CCE_CORES, R_CCE_MEM);
    return -1;
  }
  if (s->cce_cores > 100 || s->cce_cores % 5 != 0) {
    snprintf(why, len, "container %s: %s is %lld, must be a multiple of 5 and at most 100", c->name,
             R_CCE_CORES, (long long)s->cce_cores);
    return -1;
  }
  c->kind = EXT_KIND_CCE;
  c->count = 1;
  c->units = s->cce_mem;
  c->cores = (int)s->cce_cores;
  snprintf(c->resource, sizeof(c->resource), "%s", R_CCE_MEM);
  return 0;
}

/* Returns 1 with *c filled, 0 when the container asks for no GPU, -1 with why. */
static int build_ctr(struct ctr_req *c, const struct seen *s, char *why, size_t len) {
  if (check_one_dialect(c->name, s, why, len) != 0) return -1;
  if (s->has_gpushare) {
    if (s->gpushare == 0) return 0;
    c->kind = EXT_KIND_GPUSHARE;
    c->count = 1;
    c->units = s->gpushare;
    snprintf(c->resource, sizeof(c->resource), "%s", R_GPUSHARE);
    return 1;
  }
  if (s->has_cce_mem || s->has_cce_cores) {
    return build_cce(c, s, why, len) == 0 ? 1 : -1;
  }
  if (!s->count_res && !s->has_mem && !s->has_pct && !s->has_cores) return 0;
  if (s->count_res && s->count == 0 && !s->has_mem && !s->has_pct && !s->has_cores) return 0;
  if (build_count(c, s, why, len) != 0) return -1;
  if (c->count > VG_SCHED_MAX_GPUS) {
    snprintf(why, len, "container %s: %d GPUs asked, at most %d per container", c->name, c->count,
             VG_SCHED_MAX_GPUS);
    return -1;
  }
  return 1;
}

static int parse_ctr(json_object *ctr, struct ctr_req *c, char *why, size_t len) {
  memset(c, 0, sizeof(*c));
  const char *cname = ext_get_str(ctr, "name");
  snprintf(c->name, sizeof(c->name), "%s", cname ? cname : "");
  json_object *res = ext_get(ctr, "resources");
  json_object *maps[2] = {ext_get(res, "requests"), ext_get(res, "limits")}; /* limits win */
  struct seen s = {0};
  for (int m = 0; m < 2; m++) {
    if (!maps[m]) continue;
    if (!json_object_is_type(maps[m], json_type_object)) {
      snprintf(why, len, "container %s: resources are not an object", c->name);
      return -1;
    }
    json_object_object_foreach(maps[m], key, val) {
      if (take_key(c->name, key, val, &s, why, len) != 0) return -1;
    }
  }
  int k = build_ctr(c, &s, why, len);
  /* The assignment names the container, and the device plugin matches it by
   * name: a GPU container needs one that fits (Kubernetes: a DNS label). */
  if (k > 0 && (cname == NULL || cname[0] == '\0' || strlen(cname) >= sizeof(c->name))) {
    snprintf(why, len, "a container asking for %s has %s name", c->resource,
             cname == NULL || cname[0] == '\0' ? "no" : "a too long (over 63 bytes)");
    return -1;
  }
  return k;
}

/* ---- annotations ---- */

struct ann_key {
  const char *name;
  size_t off; /* into struct pod_req, a char[EXT_LIST_MAX] */
};

static const struct ann_key list_keys[] = {
    {"vgpu.io/use-gputype", offsetof(struct pod_req, use_type)},
    {"nvidia.com/use-gputype", offsetof(struct pod_req, use_type)},
    {"vgpu.io/nouse-gputype", offsetof(struct pod_req, nouse_type)},
    {"nvidia.com/nouse-gputype", offsetof(struct pod_req, nouse_type)},
    {"vgpu.io/use-gpuuuid", offsetof(struct pod_req, use_uuid)},
    {"nvidia.com/use-gpuuuid", offsetof(struct pod_req, use_uuid)},
    {"vgpu.io/nouse-gpuuuid", offsetof(struct pod_req, nouse_uuid)},
    {"nvidia.com/nouse-gpuuuid", offsetof(struct pod_req, nouse_uuid)},
};

static int parse_policies(json_object *ann, struct pod_req *r, char *why, size_t len) {
  static const char *const node_keys[] = {"vgpu.io/node-scheduler-policy",
                                          "hami.io/node-scheduler-policy"};
  static const char *const gpu_keys[] = {"vgpu.io/gpu-scheduler-policy",
                                         "hami.io/gpu-scheduler-policy"};
  for (int i = 0; i < 2; i++) {
    const char *v = ext_get_str(ann, node_keys[i]);
    if (v && !(r->node_policy = vg_policy_find(v))) {
      snprintf(why, len,
               "annotation %s: unknown policy '%.64s' (binpack, spread, fgd, bestfit, ...)",
               node_keys[i], v);
      return -1;
    }
    v = ext_get_str(ann, gpu_keys[i]);
    if (!v) continue;
    if (strcmp(v, "binpack") == 0)
      r->gpu_policy = EXT_GPU_BINPACK;
    else if (strcmp(v, "spread") == 0)
      r->gpu_policy = EXT_GPU_SPREAD;
    else {
      snprintf(why, len, "annotation %s: '%.64s' is not binpack or spread", gpu_keys[i], v);
      return -1;
    }
  }
  return 0;
}

static int parse_annotations(json_object *pod, struct pod_req *r, char *why, size_t len) {
  json_object *ann = ext_get(ext_get(pod, "metadata"), "annotations");
  for (size_t i = 0; i < sizeof(list_keys) / sizeof(list_keys[0]); i++) {
    json_object *v = ext_get(ann, list_keys[i].name);
    if (!v) continue;
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!s || strlen(s) >= EXT_LIST_MAX) {
      snprintf(why, len, "annotation %s must be a comma list shorter than %d bytes",
               list_keys[i].name, EXT_LIST_MAX);
      return -1;
    }
    snprintf((char *)r + list_keys[i].off, EXT_LIST_MAX, "%s", s);
  }
  return parse_policies(ann, r, why, len);
}

/* The kubelet hands an init container's devices on to the app containers,
 * so a pod's GPUs would be max(init, sum of app) containers' - but the
 * assignment names app containers only, and the device plugin would place an
 * init container's GPUs where the scheduler did not account them. Refused
 * by name instead of silently ignored. */
static int refuse_gpu_init_containers(json_object *pod, char *why, size_t len) {
  json_object *init = ext_get(ext_get(pod, "spec"), "initContainers");
  if (!init || json_object_is_type(init, json_type_null)) return 0;
  if (!json_object_is_type(init, json_type_array)) {
    snprintf(why, len, "Pod.spec.initContainers is not an array");
    return -1;
  }
  for (size_t i = 0; i < json_object_array_length(init); i++) {
    struct ctr_req c;
    int k = parse_ctr(json_object_array_get_idx(init, i), &c, why, len);
    if (k < 0) return -1;
    if (k > 0) {
      snprintf(why, len,
               "init container %s asks for %s: GPUs are placed for app containers only "
               "(docs/scheduler.md)",
               c.name, c.resource);
      return -1;
    }
  }
  return 0;
}

int ext_parse_pod(json_object *pod, struct pod_req *r, char *why, size_t len) {
  memset(r, 0, sizeof(*r));
  if (!pod || !json_object_is_type(pod, json_type_object)) {
    snprintf(why, len, "Pod is missing or not an object");
    return -1;
  }
  json_object *ctrs = ext_get(ext_get(pod, "spec"), "containers");
  if (ctrs && !json_object_is_type(ctrs, json_type_array)) {
    snprintf(why, len, "Pod.spec.containers is not an array");
    return -1;
  }
  size_t nc = ctrs ? json_object_array_length(ctrs) : 0;
  for (size_t i = 0; i < nc; i++) {
    struct ctr_req c;
    int k = parse_ctr(json_object_array_get_idx(ctrs, i), &c, why, len);
    if (k < 0) return -1;
    if (k == 0) continue;
    if (r->n == EXT_MAX_CTRS) {
      snprintf(why, len, "more than %d containers ask for GPUs", EXT_MAX_CTRS);
      return -1;
    }
    for (int j = 0; j < r->n; j++) /* the assignment is keyed by name */
      if (strcmp(r->c[j].name, c.name) == 0) {
        snprintf(why, len, "two containers are named %s", c.name);
        return -1;
      }
    r->c[r->n++] = c;
  }
  if (refuse_gpu_init_containers(pod, why, len) != 0) return -1;
  struct vg_cpu_mem cm;
  struct vg_err err = {{0}};
  if (vg_pod_requests(pod, &cm, &err) != 0) {
    snprintf(why, len, "%s", err.msg);
    return -1;
  }
  r->cpu = cm.cpu;
  r->mem = cm.mem;
  return parse_annotations(pod, r, why, len);
}

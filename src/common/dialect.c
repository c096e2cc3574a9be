/*
 * dialect.c -- the dialect table (see dialect.h) and the lookups on it.
 *
 * The rows are the resource names a pod can request (docs/configuration.md); their
 * order is the role enum's, which is also the order of the admission
 * webhook's default --resources list and of kube-scheduler's
 * managedResources in deploy/base/scheduler-config.yaml.
 */
#include "dialect.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const struct vg_role_info g_roles[VG_ROLE_COUNT] = {
    [VG_ROLE_VGPU_COUNT] = {.dialect = VG_DIALECT_VGPU,
                            .default_name = "nvidia.com/vgpu",
                            .key = "vgpu.resourceName",
                            .unit = VG_UNIT_COUNT,
                            .device = 1,
                            .memory_per_id = 0,
                            .unit_text = ""},
    [VG_ROLE_VGPU_MEM] = {.dialect = VG_DIALECT_VGPU,
                          .default_name = "nvidia.com/gpumem",
                          .key = "vgpu.resourceMem",
                          .unit = VG_UNIT_MIB,
                          .device = 0,
                          .memory_per_id = 0,
                          .unit_text = " (MiB)"},
    [VG_ROLE_VGPU_MEM_PCT] = {.dialect = VG_DIALECT_VGPU,
                              .default_name = "nvidia.com/gpumem-percentage",
                              .key = "vgpu.resourceMemPercentage",
                              .unit = VG_UNIT_PERCENT,
                              .device = 0,
                              .memory_per_id = 0,
                              .unit_text = ""},
    [VG_ROLE_VGPU_CORES] = {.dialect = VG_DIALECT_VGPU,
                            .default_name = "nvidia.com/gpucores",
                            .key = "vgpu.resourceCores",
                            .unit = VG_UNIT_PERCENT,
                            .device = 0,
                            .memory_per_id = 0,
                            .unit_text = ""},
    [VG_ROLE_GPUSHARE_MEM] = {.dialect = VG_DIALECT_GPUSHARE,
                              .default_name = "aliyun.com/gpu-mem",
                              .key = "gpushare.resourceName",
                              .unit = VG_UNIT_NODE,
                              .device = 1,
                              .memory_per_id = 0,
                              .unit_text = " (memory units of the node's GPUs)"},
    [VG_ROLE_GPU] = {.dialect = VG_DIALECT_TIMESLICING,
                     .default_name = "nvidia.com/gpu",
                     .key = NULL,
                     .unit = VG_UNIT_COUNT,
                     .device = 1,
                     .memory_per_id = 0,
                     .unit_text = ""},
    [VG_ROLE_GPU_SHARED] = {.dialect = VG_DIALECT_TIMESLICING,
                            .default_name = "nvidia.com/gpu.shared",
                            .key = NULL,
                            .unit = VG_UNIT_COUNT,
                            .device = 1,
                            .memory_per_id = 0,
                            .unit_text = ""},
    [VG_ROLE_CCE_MEM] = {.dialect = VG_DIALECT_CCE,
                         .default_name = "volcano.sh/gpu-mem.128Mi",
                         .key = NULL,
                         .unit = VG_UNIT_128MIB,
                         .device = 1,
                         .memory_per_id = VG_CCE_UNIT,
                         .unit_text = " (units of 128 MiB)"},
    [VG_ROLE_CCE_CORES] = {.dialect = VG_DIALECT_CCE,
                           .default_name = "volcano.sh/gpu-core.percentage",
                           .key = NULL,
                           .unit = VG_UNIT_PERCENT,
                           .device = 0,
                           .memory_per_id = 0,
                           .unit_text = ""},
};

/* name: the configuration's and the inventory's spelling; label: messages'. */
static const struct {
  const char *name, *label;
} g_dialects[VG_DIALECT_COUNT] = {
    [VG_DIALECT_VGPU] = {"vgpu", "vgpu"},
    [VG_DIALECT_GPUSHARE] = {"gpushare", "gpushare"},
    [VG_DIALECT_TIMESLICING] = {"timeSlicing", "time-slicing"},
    [VG_DIALECT_CCE] = {"cce", "cce"},
};

const struct vg_role_info *vg_role_info(enum vg_role r) { return &g_roles[r]; }

const char *vg_dialect_name(enum vg_dialect d) {
  return d >= 0 && d < VG_DIALECT_COUNT ? g_dialects[d].name : "unknown";
}

const char *vg_dialect_label(enum vg_dialect d) {
  return d >= 0 && d < VG_DIALECT_COUNT ? g_dialects[d].label : "unknown";
}

enum vg_dialect vg_dialect_from_name(const char *s) {
  for (int d = 0; s != NULL && d < VG_DIALECT_COUNT; d++)
    if (strcmp(s, g_dialects[d].name) == 0) return (enum vg_dialect)d;
  return VG_DIALECT_NONE;
}

void vg_resource_names_default(struct vg_resource_names *n) {
  for (int r = 0; r < VG_ROLE_COUNT; r++)
    snprintf(n->name[r], sizeof(n->name[r]), "%s", g_roles[r].default_name);
}

const char *vg_resource_name(const struct vg_resource_names *n, enum vg_role r) {
  return n != NULL ? n->name[r] : g_roles[r].default_name;
}

int vg_resource_role(const struct vg_resource_names *n, const char *name) {
  for (int r = 0; name != NULL && r < VG_ROLE_COUNT; r++)
    if (strcmp(name, vg_resource_name(n, (enum vg_role)r)) == 0) return r;
  return -1;
}

/* The role renamed by configuration key `key` (length len), or -1. */
static int role_of_key(const char *key, size_t len) {
  for (int r = 0; r < VG_ROLE_COUNT; r++)
    if (g_roles[r].key != NULL && strlen(g_roles[r].key) == len &&
        strncmp(g_roles[r].key, key, len) == 0)
      return r;
  return -1;
}

int vg_resource_names_set(struct vg_resource_names *n, const char *arg, struct vg_err *err) {
  const char *eq = strchr(arg, '=');
  if (eq == NULL)
    return vg_err_set(err, "--resource '%.80s': expected KEY=NAME, KEY one of %s", arg,
                      vg_resource_keys());
  int role = role_of_key(arg, (size_t)(eq - arg));
  if (role < 0)
    return vg_err_set(err, "--resource: unknown key '%.*s' (one of %s)",
                      (int)(eq - arg > 80 ? 80 : eq - arg), arg, vg_resource_keys());
  const char *name = eq + 1;
  size_t len = strlen(name);
  if (len == 0 || len >= VG_RESOURCE_NAME_MAX || strchr(name, '/') == NULL)
    return vg_err_set(err, "--resource %s: '%.80s' is not an extended resource name (domain/name)",
                      g_roles[role].key, name);
  int other = vg_resource_role(n, name);
  if (other >= 0 && other != role)
    return vg_err_set(err, "--resource %s: %s already names another resource", g_roles[role].key,
                      name);
  snprintf(n->name[role], sizeof(n->name[role]), "%s", name);
  return 0;
}

int vg_resource_names_join(const struct vg_resource_names *n, const char *sep, char *buf,
                           size_t len) {
  size_t used = 0;
  for (int r = 0; r < VG_ROLE_COUNT; r++) {
    int k = snprintf(buf + used, len - used, "%s%s", r > 0 ? sep : "",
                     vg_resource_name(n, (enum vg_role)r));
    if (k < 0 || (size_t)k >= len - used) return -1;
    used += (size_t)k;
  }
  return 0;
}

/* The keys, joined once from the table (so that a new row's key is listed). */
static char g_keys[512];
static pthread_once_t g_keys_once = PTHREAD_ONCE_INIT;

static void join_keys(void) {
  size_t used = 0;
  for (int r = 0; r < VG_ROLE_COUNT; r++) {
    if (g_roles[r].key == NULL) continue;
    int k = snprintf(g_keys + used, sizeof(g_keys) - used, "%s%s", used > 0 ? ", " : "",
                     g_roles[r].key);
    if (k < 0 || (size_t)k >= sizeof(g_keys) - used) return; /* cut short: still a string */
    used += (size_t)k;
  }
}

const char *vg_resource_keys(void) {
  pthread_once(&g_keys_once, join_keys);
  return g_keys;
}

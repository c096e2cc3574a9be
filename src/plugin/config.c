/*
 * config.c -- the device plugin's YAML configuration (libyaml document API).
 *
 * The whole document is loaded, then walked against a fixed schema: every
 * mapping's keys are checked first (unknown and duplicate keys are errors,
 * libyaml does not catch duplicates itself), then each value is read with a
 * type check. The schema has no recursive types, so a YAML alias cycle can not
 * make the walk recurse without end. Every message carries the libyaml mark of
 * the node at fault as "path:line:column: reason".
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "size.h"

#define MAX_FILE_BYTES (1 << 20)
#define MAX_NAMES 16

struct seen_name {
  const char *name;
  const char *dialect;
  yaml_mark_t mark;
};

struct ctx {
  const char *path;
  yaml_document_t *doc;
  struct vg_err *err;
  struct seen_name names[MAX_NAMES];
  size_t n_names;
  char ignored[VG_CONFIG_WARNINGS_MAX - 128]; /* "flags.x, sharing.mps, ..." */
};

/* dst = the table's default name of role r. */
static void default_name(char dst[VG_RESOURCE_NAME_MAX], enum vg_role r) {
  snprintf(dst, VG_RESOURCE_NAME_MAX, "%s", vg_resource_name(NULL, r));
}

static int fail_at(struct ctx *c, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(struct ctx *c, yaml_mark_t mark, const char *fmt, ...) {
  char reason[VG_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  return vg_err_set(c->err, "%s:%zu:%zu: %s", c->path, mark.line + 1, mark.column + 1, reason);
}

#define FAIL(c, node, ...) fail_at((c), (node)->start_mark, __VA_ARGS__)

static yaml_node_t *node_at(struct ctx *c, int index) {
  return yaml_document_get_node(c->doc, index);
}

static const char *kind_name(const yaml_node_t *n) {
  switch (n->type) {
    case YAML_SCALAR_NODE:
      return "a scalar";
    case YAML_SEQUENCE_NODE:
      return "a list";
    case YAML_MAPPING_NODE:
      return "a mapping";
    default:
      return "nothing";
  }
}

static const char *scalar(const yaml_node_t *n) {
  return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int is_plain(const yaml_node_t *n) {
  return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int is_null(const yaml_node_t *n) {
  if (!is_plain(n)) return 0;
  const char *s = scalar(n);
  return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
         strcmp(s, "NULL") == 0;
}

static int expect_map(struct ctx *c, yaml_node_t *n, const char *what) {
  if (n->type != YAML_MAPPING_NODE)
    return FAIL(c, n, "%s must be a mapping, got %s", what, kind_name(n));
  return 0;
}

/* Checks that every key of `map` is a scalar from `known` and appears once. */
static int check_keys(struct ctx *c, yaml_node_t *map, const char *what, const char *const *known) {
  yaml_node_pair_t *start = map->data.mapping.pairs.start;
  yaml_node_pair_t *top = map->data.mapping.pairs.top;
  for (yaml_node_pair_t *p = start; p < top; p++) {
    yaml_node_t *k = node_at(c, p->key);
    if (k == NULL || k->type != YAML_SCALAR_NODE)
      return FAIL(c, k != NULL ? k : map, "%s: keys must be scalars", what);
    const char *key = scalar(k);
    if (strlen(key) != k->data.scalar.length)
      return FAIL(c, k, "%s: key contains a NUL byte", what);
    int ok = 0;
    for (const char *const *q = known; *q != NULL; q++)
      if (strcmp(*q, key) == 0) ok = 1;
    if (!ok) {
      char list[256] = "";
      for (const char *const *q = known; *q != NULL; q++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", q == known ? "" : ", ", *q);
      }
      return FAIL(c, k, "unknown key '%.100s' in %s (known: %s)", key, what, list);
    }
    for (yaml_node_pair_t *o = start; o < p; o++) {
      yaml_node_t *ok2 = node_at(c, o->key);
      if (strcmp(scalar(ok2), key) == 0)
        return FAIL(c, k, "duplicate key '%s' in %s (first at line %zu)", key, what,
                    ok2->start_mark.line + 1);
    }
  }
  return 0;
}

/* The value under `key` of a checked mapping; NULL if absent. */
static yaml_node_t *lookup(struct ctx *c, yaml_node_t *map, const char *key,
                           yaml_node_t **keynode) {
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key);
    if (k != NULL && scalar(k) != NULL && strcmp(scalar(k), key) == 0) {
      if (keynode != NULL) *keynode = k;
      return node_at(c, p->value);
    }
  }
  return NULL;
}

static int get_string(struct ctx *c, yaml_node_t *n, const char *what, char *buf, size_t cap) {
  if (n->type != YAML_SCALAR_NODE)
    return FAIL(c, n, "%s must be a string, got %s", what, kind_name(n));
  const char *s = scalar(n);
  if (strlen(s) != n->data.scalar.length) return FAIL(c, n, "%s contains a NUL byte", what);
  if (s[0] == '\0' || is_null(n)) return FAIL(c, n, "%s must not be empty", what);
  if (strlen(s) >= cap) return FAIL(c, n, "%s is too long (at most %zu characters)", what, cap - 1);
  memcpy(buf, s, strlen(s) + 1);
  return 0;
}

static int get_bool(struct ctx *c, yaml_node_t *n, const char *what, int *out) {
  static const char *const t[] = {"true", "True", "TRUE"}, *const f[] = {"false", "False", "FALSE"};
  if (is_plain(n)) {
    for (int i = 0; i < 3; i++) {
      if (strcmp(scalar(n), t[i]) == 0) return *out = 1, 0;
      if (strcmp(scalar(n), f[i]) == 0) return *out = 0, 0;
    }
  }
  if (n->type == YAML_SCALAR_NODE)
    return FAIL(c, n, "%s must be true or false, got '%.60s'", what, scalar(n));
  return FAIL(c, n, "%s must be true or false, got %s", what, kind_name(n));
}

/* A plain decimal integer, sign allowed so that "-1" gets a range message. */
static int get_int(struct ctx *c, yaml_node_t *n, const char *what, long long *out) {
  if (n->type != YAML_SCALAR_NODE)
    return FAIL(c, n, "%s must be an integer, got %s", what, kind_name(n));
  const char *s = scalar(n);
  const char *p = s[0] == '-' ? s + 1 : s;
  int digits = p[0] != '\0';
  for (const char *q = p; *q != '\0'; q++)
    if (*q < '0' || *q > '9') digits = 0;
  if (!is_plain(n) || !digits || strlen(s) != n->data.scalar.length)
    return FAIL(c, n, "%s must be an integer, got '%.60s'", what, s);
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno != 0) return FAIL(c, n, "%s is out of range: '%.60s'", what, s);
  *out = v;
  return 0;
}

static int get_double(struct ctx *c, yaml_node_t *n, const char *what, double *out) {
  if (n->type != YAML_SCALAR_NODE)
    return FAIL(c, n, "%s must be a number, got %s", what, kind_name(n));
  const char *s = scalar(n);
  char *end = NULL;
  errno = 0;
  double v = (is_plain(n) && s[0] != '\0' && strlen(s) == n->data.scalar.length &&
              strchr("-.0123456789", s[0]) != NULL)
                 ? strtod(s, &end)
                 : NAN;
  if (end == NULL || *end != '\0' || errno != 0 || !isfinite(v))
    return FAIL(c, n, "%s must be a number, got '%.60s'", what, s);
  *out = v;
  return 0;
}

/* domain/name, as Kubernetes accepts for an extended resource. */
static int check_resource_name(struct ctx *c, yaml_node_t *n, const char *what, const char *s) {
  const char *slash = strchr(s, '/');
  size_t dlen = slash != NULL ? (size_t)(slash - s) : 0;
  int ok = slash != NULL && dlen > 0 && dlen <= 253 && strlen(slash + 1) > 0 &&
           strlen(slash + 1) <= 63 && strchr(slash + 1, '/') == NULL;
  for (size_t i = 0; ok && i < dlen; i++)
    ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.';
  for (const char *q = slash != NULL ? slash + 1 : s; ok && *q != '\0'; q++)
    ok = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
         *q == '-' || *q == '_' || *q == '.';
  if (!ok)
    return FAIL(c, n, "%s '%.100s' is not a valid extended resource name (domain/name)", what, s);
  static const char *const reserved[] = {"kubernetes.io", "k8s.io"};
  for (int i = 0; i < 2; i++) {
    size_t rl = strlen(reserved[i]);
    if (dlen >= rl && memcmp(s + dlen - rl, reserved[i], rl) == 0 &&
        (dlen == rl || s[dlen - rl - 1] == '.'))
      return FAIL(c, n, "%s '%.100s': the %s domain is reserved", what, s, reserved[i]);
  }
  return 0;
}

static int get_resource(struct ctx *c, yaml_node_t *n, const char *what, char *buf) {
  if (get_string(c, n, what, buf, VG_RESOURCE_NAME_MAX) != 0) return -1;
  return check_resource_name(c, n, what, buf);
}

static void note_name(struct ctx *c, const char *name, const char *dialect, yaml_mark_t mark) {
  if (c->n_names < MAX_NAMES) c->names[c->n_names++] = (struct seen_name){name, dialect, mark};
}

/* Reads an optional resource-name key, keeping the default in buf, and notes it. */
static int opt_resource(struct ctx *c, yaml_node_t *map, const char *key, const char *dialect,
                        yaml_mark_t deflt_mark, char *buf) {
  char what[64];
  snprintf(what, sizeof(what), "%s.%s", dialect, key);
  yaml_node_t *v = map != NULL ? lookup(c, map, key, NULL) : NULL;
  if (v != NULL && get_resource(c, v, what, buf) != 0) return -1;
  note_name(c, buf, dialect, v != NULL ? v->start_mark : deflt_mark);
  return 0;
}

/* Names an NVIDIA setting that is valid but has no effect here. It is
 * collected, not printed: the caller logs the one line at startup. */
static void ignore_key(struct ctx *c, const char *key) {
  size_t len = strlen(c->ignored);
  if (len + strlen(key) + 8 >= sizeof(c->ignored)) {
    if (len + 5 < sizeof(c->ignored) && strstr(c->ignored, ", ...") == NULL)
      memcpy(c->ignored + len, ", ...", 6);
    return;
  }
  snprintf(c->ignored + len, sizeof(c->ignored) - len, "%s%s", len > 0 ? ", " : "", key);
}

/* A mapping of NVIDIA settings none of which has an effect here: its keys
 * are checked (a typo stays an error) and each is named as ignored. */
static int ignore_section(struct ctx *c, yaml_node_t *n, const char *what,
                          const char *const *known) {
  if (is_null(n)) return 0;
  if (expect_map(c, n, what) != 0 || check_keys(c, n, what, known) != 0) return -1;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    const char *key = scalar(node_at(c, p->key));
    if (key == NULL) continue; /* check_keys refused non-scalar keys already */
    char path[128];
    snprintf(path, sizeof(path), "%s.%s", what, key);
    ignore_key(c, path);
  }
  return 0;
}

/* ---- dialects ---------------------------------------------------------- */

static int parse_vgpu(struct ctx *c, yaml_node_t *key, yaml_node_t *n, struct vg_dialect_vgpu *v) {
  static const char *const known[] = {
      "resourceName",     "resourceMem",         "resourceMemPercentage", "resourceCores",
      "deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling",     NULL};
  v->enabled = 1;
  default_name(v->resource_count, VG_ROLE_VGPU_COUNT);
  default_name(v->resource_mem, VG_ROLE_VGPU_MEM);
  default_name(v->resource_mem_percentage, VG_ROLE_VGPU_MEM_PCT);
  default_name(v->resource_cores, VG_ROLE_VGPU_CORES);
  v->split_count = 10;
  v->memory_scaling = 1.0;
  v->core_scaling = 1.0;
  yaml_node_t *m = NULL;
  if (!is_null(n)) {
    if (expect_map(c, n, "vgpu") != 0 || check_keys(c, n, "vgpu", known) != 0) return -1;
    m = n;
  }
  if (opt_resource(c, m, "resourceName", "vgpu", key->start_mark, v->resource_count) != 0 ||
      opt_resource(c, m, "resourceMem", "vgpu", key->start_mark, v->resource_mem) != 0 ||
      opt_resource(c, m, "resourceMemPercentage", "vgpu", key->start_mark,
                   v->resource_mem_percentage) != 0 ||
      opt_resource(c, m, "resourceCores", "vgpu", key->start_mark, v->resource_cores) != 0)
    return -1;
  if (m == NULL) return 0;
  yaml_node_t *x;
  if ((x = lookup(c, m, "deviceSplitCount", NULL)) != NULL) {
    long long s;
    if (get_int(c, x, "vgpu.deviceSplitCount", &s) != 0) return -1;
    if (s < 1 || s > VG_VGPU_SPLIT_MAX)
      return FAIL(c, x, "vgpu.deviceSplitCount must be 1..%d, got %lld", VG_VGPU_SPLIT_MAX, s);
    v->split_count = (unsigned)s;
  }
  if ((x = lookup(c, m, "deviceMemoryScaling", NULL)) != NULL) {
    if (get_double(c, x, "vgpu.deviceMemoryScaling", &v->memory_scaling) != 0) return -1;
    if (v->memory_scaling > 1.0)
      return FAIL(c, x,
                  "vgpu.deviceMemoryScaling %g > 1 would oversubscribe GPU memory: libvgpu has no "
                  "host-memory spill, so the slices' limits would add up to more than the GPU "
                  "has and a container could hit the driver's out-of-memory below its own limit; "
                  "use a value in (0, 1]",
                  v->memory_scaling);
    if (v->memory_scaling <= 0.0)
      return FAIL(c, x, "vgpu.deviceMemoryScaling must be in (0, 1], got %g", v->memory_scaling);
  }
  if ((x = lookup(c, m, "deviceCoreScaling", NULL)) != NULL) {
    if (get_double(c, x, "vgpu.deviceCoreScaling", &v->core_scaling) != 0) return -1;
    if (v->core_scaling <= 0.0 || v->core_scaling > 10.0)
      return FAIL(c, x, "vgpu.deviceCoreScaling must be in (0, 10], got %g", v->core_scaling);
  }
  return 0;
}

static int parse_gpushare(struct ctx *c, yaml_node_t *key, yaml_node_t *n,
                          struct vg_dialect_gpushare *g) {
  static const char *const known[] = {"resourceName", "memoryUnit", NULL};
  g->enabled = 1;
  g->unit = VG_GPUSHARE_UNIT_DEFAULT;
  default_name(g->resource, VG_ROLE_GPUSHARE_MEM);
  yaml_node_t *m = NULL;
  if (!is_null(n)) {
    if (expect_map(c, n, "gpushare") != 0 || check_keys(c, n, "gpushare", known) != 0) return -1;
    m = n;
  }
  if (opt_resource(c, m, "resourceName", "gpushare", key->start_mark, g->resource) != 0) return -1;
  yaml_node_t *x = m != NULL ? lookup(c, m, "memoryUnit", NULL) : NULL;
  if (x != NULL) {
    const char *s = scalar(x);
    if (s != NULL && strcmp(s, "GiB") == 0)
      g->unit = 1ULL << 30;
    else if (s != NULL && strcmp(s, "MiB") == 0)
      g->unit = 1ULL << 20;
    else
      return FAIL(c, x, "gpushare.memoryUnit must be GiB or MiB, got '%.60s'",
                  s != NULL ? s : kind_name(x));
  }
  return 0;
}

static int parse_cce(struct ctx *c, yaml_node_t *key, yaml_node_t *n, struct vg_dialect_cce *g) {
  static const char *const known[] = {"maxVgpusPerGpu", NULL};
  g->enabled = 1;
  g->max_vgpus_per_gpu = VG_CCE_MAX_VGPUS;
  default_name(g->resource_mem, VG_ROLE_CCE_MEM);
  default_name(g->resource_core, VG_ROLE_CCE_CORES);
  note_name(c, g->resource_mem, "cce", key->start_mark);
  note_name(c, g->resource_core, "cce", key->start_mark);
  if (is_null(n)) return 0;
  if (expect_map(c, n, "cce") != 0 || check_keys(c, n, "cce", known) != 0) return -1;
  yaml_node_t *x = lookup(c, n, "maxVgpusPerGpu", NULL);
  if (x != NULL) {
    long long v;
    if (get_int(c, x, "cce.maxVgpusPerGpu", &v) != 0) return -1;
    if (v < 1 || v > VG_CCE_MAX_VGPUS)
      return FAIL(c, x, "cce.maxVgpusPerGpu must be 1..%d (CCE's limit), got %lld",
                  VG_CCE_MAX_VGPUS, v);
    g->max_vgpus_per_gpu = (unsigned)v;
  }
  return 0;
}

static int parse_version(struct ctx *c, yaml_node_t *n) {
  const char *s = scalar(n);
  if (s == NULL || strcmp(s, "v1") != 0)
    return FAIL(c, n, "unsupported version '%.60s' (this plugin reads version v1)",
                s != NULL ? s : kind_name(n));
  return 0;
}

static int parse_devices(struct ctx *c, yaml_node_t *n, struct vg_dialect_timeslicing *t) {
  const char *what = "sharing.timeSlicing.resources[].devices";
  if (n->type == YAML_SCALAR_NODE) {
    if (strcmp(scalar(n), "all") == 0) return 0;
    return FAIL(c, n, "%s must be 'all' or a list of GPU indices, got '%.60s'", what, scalar(n));
  }
  if (n->type != YAML_SEQUENCE_NODE)
    return FAIL(c, n, "%s must be 'all' or a list of GPU indices, got %s", what, kind_name(n));
  t->all_devices = 0;
  t->n_devices = 0;
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    yaml_node_t *d = node_at(c, *i);
    long long v;
    if (d->type == YAML_SCALAR_NODE && !is_plain(d))
      return FAIL(c, d, "%s: '%.60s' is not a GPU index (UUIDs and MIG devices are not supported)",
                  what, scalar(d));
    if (get_int(c, d, what, &v) != 0) return -1;
    if (v < 0 || v >= 1024) return FAIL(c, d, "%s: GPU index %lld is out of range", what, v);
    for (size_t j = 0; j < t->n_devices; j++)
      if (t->devices[j] == (unsigned)v) return FAIL(c, d, "%s: GPU index %lld twice", what, v);
    if (t->n_devices == VG_TS_DEVICES_MAX)
      return FAIL(c, d, "%s: more than %d GPUs", what, VG_TS_DEVICES_MAX);
    t->devices[t->n_devices++] = (unsigned)v;
  }
  if (t->n_devices == 0) return FAIL(c, n, "%s is an empty list", what);
  return 0;
}

static int parse_ts_resource(struct ctx *c, yaml_node_t *n, struct vg_dialect_timeslicing *t) {
  static const char *const known[] = {"name", "replicas", "devices", "rename", NULL};
  const char *what = "sharing.timeSlicing.resources[]";
  if (expect_map(c, n, what) != 0) return -1;
  if (check_keys(c, n, what, known) != 0) return -1;
  /* NVIDIA's plugin ignores a per-resource rename too; renameByDefault works. */
  if (lookup(c, n, "rename", NULL) != NULL) ignore_key(c, "sharing.timeSlicing.resources[].rename");
  yaml_node_t *name = lookup(c, n, "name", NULL), *rep = lookup(c, n, "replicas", NULL);
  if (name == NULL) return FAIL(c, n, "%s: 'name' is required", what);
  if (rep == NULL) return FAIL(c, n, "%s: 'replicas' is required", what);
  char buf[VG_RESOURCE_NAME_MAX];
  if (get_string(c, name, "sharing.timeSlicing.resources[].name", buf, sizeof(buf)) != 0) return -1;
  if (strncmp(buf, "nvidia.com/mig-", 15) == 0)
    return FAIL(c, name, "MIG resource '%.100s' is not supported; vgpu shares whole GPUs", buf);
  const char *gpu = vg_resource_name(NULL, VG_ROLE_GPU);
  if (strcmp(buf, gpu) != 0)
    return FAIL(c, name,
                "unknown time-slicing resource '%.100s' (NVIDIA's plugin names only "
                "%s and MIG devices)",
                buf, gpu);
  long long r;
  if (get_int(c, rep, "sharing.timeSlicing.resources[].replicas", &r) != 0) return -1;
  if (r < 1) return FAIL(c, rep, "replicas must be at least 1, got %lld", r);
  if (r > VG_TS_REPLICAS_MAX)
    return FAIL(c, rep, "replicas must be at most %d, got %lld", VG_TS_REPLICAS_MAX, r);
  t->replicas = (unsigned)r;
  yaml_node_t *dev = lookup(c, n, "devices", NULL);
  if (dev != NULL && parse_devices(c, dev, t) != 0) return -1;
  return 0;
}

/* flags.migStrategy: none is what vgpu does; NVIDIA's single and mixed only
 * matter on GPUs in MIG mode, which vgpu does not share, so they are named
 * as ignored. Any other value NVIDIA refuses too. */
static int parse_mig_strategy(struct ctx *c, yaml_node_t *x) {
  const char *s = scalar(x);
  if (s != NULL && strcmp(s, "none") == 0) return 0;
  if (s != NULL && (strcmp(s, "single") == 0 || strcmp(s, "mixed") == 0)) {
    ignore_key(c, "flags.migStrategy");
    return 0;
  }
  return FAIL(c, x, "flags.migStrategy must be none, single or mixed, got '%.60s'",
              s != NULL ? s : kind_name(x));
}

/* NVIDIA's command-line flags: none of them changes what vgpu does. */
static int parse_flags(struct ctx *c, yaml_node_t *n) {
  static const char *const known[] = {"migStrategy",
                                      "failOnInitError",
                                      "mpsRoot",
                                      "nvidiaDriverRoot",
                                      "nvidiaDevRoot",
                                      "gdsEnabled",
                                      "mofedEnabled",
                                      "gdrcopyEnabled",
                                      "useNodeFeatureAPI",
                                      "deviceDiscoveryStrategy",
                                      "plugin",
                                      "gfd",
                                      NULL};
  static const char *const known_plugin[] = {"passDeviceSpecs",
                                             "deviceListStrategy",
                                             "deviceIDStrategy",
                                             "cdiAnnotationPrefix",
                                             "nvidiaCTKPath",
                                             "containerDriverRoot",
                                             "sharedDevicesAllocationPolicy",
                                             NULL};
  static const char *const known_gfd[] = {"oneshot",    "noTimestamp",     "sleepInterval",
                                          "outputFile", "machineTypeFile", NULL};
  if (is_null(n)) return 0;
  if (expect_map(c, n, "flags") != 0 || check_keys(c, n, "flags", known) != 0) return -1;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    const char *key = scalar(node_at(c, p->key));
    yaml_node_t *v = node_at(c, p->value);
    if (key == NULL) continue; /* check_keys refused non-scalar keys already */
    char path[64];
    snprintf(path, sizeof(path), "flags.%s", key);
    int rc = 0;
    if (strcmp(key, "migStrategy") == 0)
      rc = parse_mig_strategy(c, v);
    else if (strcmp(key, "plugin") == 0)
      rc = ignore_section(c, v, path, known_plugin);
    else if (strcmp(key, "gfd") == 0)
      rc = ignore_section(c, v, path, known_gfd);
    else
      ignore_key(c, path);
    if (rc != 0) return -1;
  }
  return 0;
}

/* A list of mappings whose keys are checked (typos stay errors) and whose
 * values are not read: the list as a whole is ignored. */
static int ignore_list(struct ctx *c, yaml_node_t *n, const char *what, const char *const *known) {
  ignore_key(c, what);
  if (is_null(n)) return 0;
  if (n->type != YAML_SEQUENCE_NODE)
    return FAIL(c, n, "%s must be a list, got %s", what, kind_name(n));
  char item[80];
  snprintf(item, sizeof(item), "%s[]", what);
  for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
    yaml_node_t *m = node_at(c, *i);
    if (expect_map(c, m, item) != 0 || check_keys(c, m, item, known) != 0) return -1;
  }
  return 0;
}

/* NVIDIA's custom resource naming (resources.gpus, resources.mig): vgpu
 * keeps the standard names, so each list is accepted and named as ignored. */
static int parse_nvidia_resources(struct ctx *c, yaml_node_t *n) {
  static const char *const known[] = {"gpus", "mig", NULL};
  static const char *const known_item[] = {"pattern", "name", NULL};
  if (is_null(n)) return 0;
  if (expect_map(c, n, "resources") != 0 || check_keys(c, n, "resources", known) != 0) return -1;
  yaml_node_t *x;
  if ((x = lookup(c, n, "gpus", NULL)) != NULL && ignore_list(c, x, "resources.gpus", known_item))
    return -1;
  if ((x = lookup(c, n, "mig", NULL)) != NULL && ignore_list(c, x, "resources.mig", known_item))
    return -1;
  return 0;
}

/* sharing.mps: vgpu provides no MPS daemon, and reading its replicas as
 * time-slicing would give pods MPS's name without MPS's isolation. So it is
 * checked for typos, named as ignored, and changes nothing. */
static int parse_mps(struct ctx *c, yaml_node_t *n) {
  static const char *const known[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources",
                                      NULL};
  static const char *const known_item[] = {"name", "rename", "devices", "replicas", NULL};
  ignore_key(c, "sharing.mps (MPS is not provided; only sharing.timeSlicing shares GPUs)");
  if (is_null(n)) return 0;
  if (expect_map(c, n, "sharing.mps") != 0 || check_keys(c, n, "sharing.mps", known) != 0)
    return -1;
  yaml_node_t *res = lookup(c, n, "resources", NULL);
  if (res == NULL || is_null(res)) return 0;
  if (res->type != YAML_SEQUENCE_NODE)
    return FAIL(c, res, "sharing.mps.resources must be a list, got %s", kind_name(res));
  for (yaml_node_item_t *i = res->data.sequence.items.start; i < res->data.sequence.items.top;
       i++) {
    yaml_node_t *m = node_at(c, *i);
    if (expect_map(c, m, "sharing.mps.resources[]") != 0 ||
        check_keys(c, m, "sharing.mps.resources[]", known_item) != 0)
      return -1;
  }
  return 0;
}

static int parse_memory_per_replica(struct ctx *c, yaml_node_t *x,
                                    struct vg_dialect_timeslicing *t) {
  const char *s = scalar(x);
  if (s != NULL && strcmp(s, "none") == 0)
    t->memory_per_replica = VG_MEMORY_PER_REPLICA_NONE;
  else if (s != NULL && strcmp(s, "equal") == 0)
    t->memory_per_replica = VG_MEMORY_PER_REPLICA_EQUAL;
  else
    return FAIL(c, x, "memoryPerReplica must be none or equal, got '%.60s'",
                s != NULL ? s : kind_name(x));
  return 0;
}

/* sharing.timeSlicing: what vgpu implements of NVIDIA's document. */
static int parse_tsl(struct ctx *c, yaml_node_t *tsl, struct vg_dialect_timeslicing *t,
                     yaml_mark_t *mark) {
  static const char *const known_tsl[] = {"renameByDefault", "failRequestsGreaterThanOne",
                                          "resources", NULL};
  yaml_node_t *x;
  if (expect_map(c, tsl, "sharing.timeSlicing") != 0 ||
      check_keys(c, tsl, "sharing.timeSlicing", known_tsl) != 0)
    return -1;
  if ((x = lookup(c, tsl, "renameByDefault", NULL)) != NULL &&
      get_bool(c, x, "renameByDefault", &t->rename_by_default) != 0)
    return -1;
  if ((x = lookup(c, tsl, "failRequestsGreaterThanOne", NULL)) != NULL &&
      get_bool(c, x, "failRequestsGreaterThanOne", &t->fail_requests_greater_than_one) != 0)
    return -1;
  yaml_node_t *res = lookup(c, tsl, "resources", NULL);
  if (res == NULL) return FAIL(c, tsl, "sharing.timeSlicing.resources is required");
  if (res->type != YAML_SEQUENCE_NODE)
    return FAIL(c, res, "sharing.timeSlicing.resources must be a list, got %s", kind_name(res));
  size_t count = (size_t)(res->data.sequence.items.top - res->data.sequence.items.start);
  if (count == 0) return FAIL(c, res, "sharing.timeSlicing.resources is an empty list");
  for (yaml_node_item_t *i = res->data.sequence.items.start; i < res->data.sequence.items.top;
       i++) {
    yaml_node_t *item = node_at(c, *i);
    if (i > res->data.sequence.items.start)
      return FAIL(c, item, "duplicate time-slicing resource: only one %s entry is allowed",
                  vg_resource_name(NULL, VG_ROLE_GPU));
    if (parse_ts_resource(c, item, t) != 0) return -1;
    *mark = item->start_mark;
  }
  return 0;
}

/* sharing: timeSlicing is implemented, mps accepted and ignored. Without
 * timeSlicing, NVIDIA's plugin advertises each GPU once, and so does vgpu. */
static int parse_sharing(struct ctx *c, yaml_node_t *sh, struct vg_dialect_timeslicing *t,
                         yaml_mark_t *mark) {
  static const char *const known[] = {"timeSlicing", "mps", NULL};
  t->replicas = 1;
  if (sh == NULL || is_null(sh)) return 0;
  if (expect_map(c, sh, "sharing") != 0 || check_keys(c, sh, "sharing", known) != 0) return -1;
  yaml_node_t *x;
  if ((x = lookup(c, sh, "mps", NULL)) != NULL && parse_mps(c, x) != 0) return -1;
  if ((x = lookup(c, sh, "timeSlicing", NULL)) != NULL && parse_tsl(c, x, t, mark) != 0) return -1;
  return 0;
}

/* The rest of NVIDIA's document: read for typos, named as ignored. */
static int parse_nvidia_extras(struct ctx *c, yaml_node_t *n, struct vg_dialect_timeslicing *t) {
  static const char *const known_imex[] = {"channelIDs", "required", NULL};
  yaml_node_t *x;
  if ((x = lookup(c, n, "flags", NULL)) != NULL && parse_flags(c, x) != 0) return -1;
  if ((x = lookup(c, n, "resources", NULL)) != NULL && parse_nvidia_resources(c, x) != 0) return -1;
  if ((x = lookup(c, n, "imex", NULL)) != NULL && ignore_section(c, x, "imex", known_imex) != 0)
    return -1;
  if ((x = lookup(c, n, "memoryPerReplica", NULL)) != NULL && parse_memory_per_replica(c, x, t))
    return -1;
  return 0;
}

/* NVIDIA's document: at the top of the file (top = 1, which also allows our
 * node-level keys) or under dialects.timeSlicing. */
static int parse_timeslicing(struct ctx *c, yaml_node_t *key, yaml_node_t *n, int top,
                             struct vg_dialect_timeslicing *t) {
  static const char *const known[] = {"version",          "flags", "sharing", "resources", "imex",
                                      "memoryPerReplica", NULL};
  static const char *const known_top[] = {
      "version",          "flags",   "sharing",  "resources",      "imex",
      "memoryPerReplica", "library", "stateDir", "contextReserve", NULL};
  t->enabled = 1;
  t->from_nvidia_file = top;
  t->all_devices = 1;
  if (is_null(n))
    return FAIL(c, n,
                "timeSlicing needs NVIDIA's time-slicing document (version: v1, "
                "sharing.timeSlicing.resources)");
  if (expect_map(c, n, "timeSlicing") != 0) return -1;
  if (check_keys(c, n, top ? "the NVIDIA time-slicing file" : "timeSlicing",
                 top ? known_top : known) != 0)
    return -1;
  yaml_node_t *x = lookup(c, n, "version", NULL);
  if (x == NULL)
    return FAIL(c, top ? n : key, "missing 'version: v1' in NVIDIA's time-slicing document");
  if (parse_version(c, x) != 0 || parse_nvidia_extras(c, n, t) != 0) return -1;
  /* Where the advertised name comes from, for duplicate-name messages. */
  yaml_mark_t mark = n->start_mark;
  if (parse_sharing(c, lookup(c, n, "sharing", NULL), t, &mark) != 0) return -1;
  default_name(t->resource, t->rename_by_default ? VG_ROLE_GPU_SHARED : VG_ROLE_GPU);
  note_name(c, t->resource, "timeSlicing", mark);
  if (t->rename_by_default && !t->all_devices)
    note_name(c, vg_resource_name(NULL, VG_ROLE_GPU), "timeSlicing", mark);
  return 0;
}

/* ---- top level --------------------------------------------------------- */

static int parse_node_options(struct ctx *c, yaml_node_t *root, struct vg_plugin_config *cfg) {
  yaml_node_t *x;
  if ((x = lookup(c, root, "library", NULL)) != NULL) {
    if (get_string(c, x, "library", cfg->library, sizeof(cfg->library)) != 0) return -1;
    if (cfg->library[0] != '/') return FAIL(c, x, "library must be an absolute path");
  }
  if ((x = lookup(c, root, "stateDir", NULL)) != NULL) {
    if (get_string(c, x, "stateDir", cfg->state_dir, sizeof(cfg->state_dir)) != 0) return -1;
    if (cfg->state_dir[0] != '/') return FAIL(c, x, "stateDir must be an absolute path");
  }
  if ((x = lookup(c, root, "contextReserve", NULL)) != NULL) {
    char buf[64];
    struct vg_err e;
    if (get_string(c, x, "contextReserve", buf, sizeof(buf)) != 0) return -1;
    if (vg_parse_size(buf, &cfg->context_reserve, &e) != 0)
      return FAIL(c, x, "contextReserve: %s", e.msg);
  }
  return 0;
}

static int parse_dialects(struct ctx *c, yaml_node_t *n, struct vg_plugin_config *cfg) {
  if (n->type != YAML_MAPPING_NODE)
    return FAIL(c, n, "dialects must be a mapping of dialect name to options, got %s",
                kind_name(n));
  if (n->data.mapping.pairs.top == n->data.mapping.pairs.start)
    return FAIL(c, n, "dialects: no dialect enabled (known: vgpu, gpushare, timeSlicing, cce)");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
    const char *name = scalar(k);
    if (name == NULL) return FAIL(c, k, "dialects: keys must be dialect names");
    for (yaml_node_pair_t *o = n->data.mapping.pairs.start; o < p; o++)
      if (strcmp(scalar(node_at(c, o->key)), name) == 0)
        return FAIL(c, k, "dialect '%s' is configured twice", name);
    int rc;
    if (strcmp(name, "vgpu") == 0)
      rc = parse_vgpu(c, k, v, &cfg->vgpu);
    else if (strcmp(name, "gpushare") == 0)
      rc = parse_gpushare(c, k, v, &cfg->gpushare);
    else if (strcmp(name, "timeSlicing") == 0)
      rc = parse_timeslicing(c, k, v, 0, &cfg->ts);
    else if (strcmp(name, "cce") == 0)
      rc = parse_cce(c, k, v, &cfg->cce);
    else
      return FAIL(c, k, "unknown dialect '%.60s' (known: vgpu, gpushare, timeSlicing, cce)", name);
    if (rc != 0) return -1;
  }
  return 0;
}

static int check_duplicate_names(struct ctx *c) {
  for (size_t i = 0; i < c->n_names; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(c->names[i].name, c->names[j].name) == 0)
        return fail_at(c, c->names[i].mark,
                       "resource '%s' is used by both %s and %s (first at line %zu); give one of "
                       "them another name",
                       c->names[i].name, c->names[j].dialect, c->names[i].dialect,
                       c->names[j].mark.line + 1);
  return 0;
}

/* NVIDIA's v1 file has no `dialects:` and at least one of its sections
 * (`version: v1` alone is ambiguous and left to our own schema). */
static int is_nvidia_file(struct ctx *c, yaml_node_t *root) {
  static const char *const sections[] = {"sharing", "flags", "resources", "imex", NULL};
  for (const char *const *s = sections; *s != NULL; s++)
    if (lookup(c, root, *s, NULL) != NULL) return 1;
  return 0;
}

/* The one warning line the caller logs; empty when nothing was ignored. */
static void set_warnings(const struct ctx *c, struct vg_plugin_config *cfg) {
  if (c->ignored[0] != '\0')
    snprintf(cfg->warnings, sizeof(cfg->warnings),
             "config: these NVIDIA settings have no effect here: %s (docs/configuration.md)",
             c->ignored);
}

static int parse_root(struct ctx *c, struct vg_plugin_config *cfg) {
  static const char *const known[] = {"version",        "library",  "stateDir",
                                      "contextReserve", "dialects", NULL};
  yaml_node_t *root = yaml_document_get_root_node(c->doc);
  if (root == NULL || is_null(root)) {
    yaml_mark_t m = {0, 0, 0};
    return fail_at(c, m, "empty configuration: expected 'dialects:' or NVIDIA's time-slicing file");
  }
  if (expect_map(c, root, "the configuration") != 0) return -1;
  yaml_node_t *x;
  if (lookup(c, root, "dialects", NULL) == NULL && is_nvidia_file(c, root)) {
    /* NVIDIA's own file, as is: the timeSlicing dialect alone. */
    if (parse_timeslicing(c, root, root, 1, &cfg->ts) != 0) return -1;
    return parse_node_options(c, root, cfg);
  }
  if (check_keys(c, root, "the configuration", known) != 0) return -1;
  if ((x = lookup(c, root, "version", NULL)) != NULL && parse_version(c, x) != 0) return -1;
  if (parse_node_options(c, root, cfg) != 0) return -1;
  if ((x = lookup(c, root, "dialects", NULL)) == NULL)
    return FAIL(c, root,
                "missing 'dialects:' (and not an NVIDIA v1 file: no 'sharing:' or 'flags:')");
  if (parse_dialects(c, x, cfg) != 0) return -1;
  return check_duplicate_names(c);
}

static void set_defaults(struct vg_plugin_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->library, sizeof(cfg->library), "%s", VG_DEFAULT_LIBRARY);
  snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", VG_DEFAULT_STATE_DIR);
  cfg->context_reserve = VG_DEFAULT_CONTEXT_RESERVE;
}

int vg_plugin_config_parse_string(const char *text, size_t len, const char *name,
                                  struct vg_plugin_config *cfg, struct vg_err *err) {
  struct vg_err scratch;
  if (err == NULL) err = &scratch;
  if (name == NULL) name = "<config>";
  set_defaults(cfg);
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) {
    memset(cfg, 0, sizeof(*cfg));
    return vg_err_set(err, "%s: out of memory", name);
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int rc = -1;
  if (!yaml_parser_load(&parser, &doc)) {
    yaml_mark_t m = parser.problem_mark;
    vg_err_set(err, "%s:%zu:%zu: YAML syntax error: %s%s%s", name, m.line + 1, m.column + 1,
               parser.problem != NULL ? parser.problem : "unknown problem",
               parser.context != NULL ? " " : "", parser.context != NULL ? parser.context : "");
    yaml_parser_delete(&parser);
    memset(cfg, 0, sizeof(*cfg));
    return -1;
  }
  struct ctx c = {.path = name, .doc = &doc, .err = err};
  rc = parse_root(&c, cfg);
  if (rc == 0) set_warnings(&c, cfg);
  if (rc == 0) {
    /* Only one document: a second one would be silently ignored. */
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
      yaml_mark_t m = parser.problem_mark;
      rc = vg_err_set(err, "%s:%zu:%zu: YAML syntax error: %s", name, m.line + 1, m.column + 1,
                      parser.problem != NULL ? parser.problem : "unknown problem");
    } else {
      yaml_node_t *r = yaml_document_get_root_node(&next);
      if (r != NULL)
        rc = vg_err_set(err, "%s:%zu:%zu: a second YAML document; the configuration is one", name,
                        r->start_mark.line + 1, r->start_mark.column + 1);
      yaml_document_delete(&next);
    }
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc != 0) memset(cfg, 0, sizeof(*cfg));
  return rc;
}

int vg_plugin_config_load(const char *path, struct vg_plugin_config *cfg, struct vg_err *err) {
  memset(cfg, 0, sizeof(*cfg));
  FILE *f = fopen(path, "rb");
  if (f == NULL) return vg_err_set(err, "%s: cannot open: %s", path, strerror(errno));
  char *buf = malloc(MAX_FILE_BYTES + 1);
  if (buf == NULL) {
    fclose(f);
    return vg_err_set(err, "%s: out of memory", path);
  }
  size_t n = fread(buf, 1, MAX_FILE_BYTES + 1, f);
  int read_error = ferror(f);
  fclose(f);
  int rc;
  if (read_error)
    rc = vg_err_set(err, "%s: read error", path);
  else if (n > MAX_FILE_BYTES)
    rc =
        vg_err_set(err, "%s: larger than %d bytes; not a configuration file", path, MAX_FILE_BYTES);
  else
    rc = vg_plugin_config_parse_string(buf, n, path, cfg, err);
  free(buf);
  return rc;
}

void vg_plugin_config_free(struct vg_plugin_config *cfg) {
  if (cfg != NULL) memset(cfg, 0, sizeof(*cfg));
}

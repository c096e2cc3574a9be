/* config.c -- see config.h. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"

#define MEM_VAR "CUDA_DEVICE_MEMORY_LIMIT"
#define SM_VAR "CUDA_DEVICE_SM_LIMIT"

/* Splits "NAME=VALUE"; returns the value or NULL if entry is not for prefix.
 * *index is -1 for the bare name, the device for NAME_<i>, -2 for a bad
 * suffix. */
static const char *match(const char *entry, const char *prefix, int *index) {
  size_t n = strlen(prefix);
  if (strncmp(entry, prefix, n) != 0) return NULL;
  const char *p = entry + n;
  if (*p == '=') {
    *index = -1;
    return p + 1;
  }
  if (*p != '_') return NULL;
  p++;
  int value = 0, digits = 0;
  while (*p >= '0' && *p <= '9' && digits < 3) value = value * 10 + (*p++ - '0'), digits++;
  *index = (digits > 0 && *p == '=' && value < VG_MAX_DEVICES) ? value : -2;
  const char *eq = strchr(entry, '=');
  return eq != NULL ? eq + 1 : NULL;
}

static int name_error(const char *entry, struct vg_err *err) {
  return vg_err_set(err, "%s: the suffix of the name must be a CUDA device index from 0 to %d",
                    entry, VG_MAX_DEVICES - 1);
}

static int apply_mem(struct vg_config *cfg, const char *entry, int index, const char *value,
                     bool *global_set, uint64_t *global, struct vg_err *err) {
  uint64_t bytes = 0;
  struct vg_err why;
  if (index == -2) return name_error(entry, err);
  if (vg_parse_size(value, &bytes, &why) != 0)
    return vg_err_set(err, "%.*s=%s: %s", (int)strcspn(entry, "="), entry, value, why.msg);
  if (cfg->note[0] == '\0' && vg_size_is_decimal(value)) {
    char name[96];
    snprintf(name, sizeof(name), "%.*s", (int)strcspn(entry, "="), entry);
    vg_size_decimal_note(name, value, bytes, cfg->note, sizeof(cfg->note));
  }
  if (index == -1) {
    *global_set = true;
    *global = bytes;
  } else {
    cfg->mem_set[index] = true;
    cfg->mem_limit[index] = bytes;
  }
  return 0;
}

static int apply_sm(struct vg_config *cfg, const char *entry, int index, const char *value,
                    bool *global_set, unsigned *global, struct vg_err *err) {
  unsigned pct = 0;
  struct vg_err why;
  if (index == -2) return name_error(entry, err);
  if (vg_parse_percent(value, &pct, &why) != 0)
    return vg_err_set(err, "%.*s=%s: %s", (int)strcspn(entry, "="), entry, value, why.msg);
  if (index == -1) {
    *global_set = true;
    *global = pct;
  } else {
    cfg->sm_set[index] = true;
    cfg->sm_limit[index] = pct;
  }
  return 0;
}

static int apply_managed(struct vg_config *cfg, const char *value, struct vg_err *err) {
  if (strcmp(value, "count") == 0)
    cfg->refuse_managed = false;
  else if (strcmp(value, "refuse") == 0)
    cfg->refuse_managed = true;
  else
    return vg_err_set(err, "VGPU_MANAGED_MEMORY=%s: use 'count' or 'refuse'", value);
  return 0;
}

static int apply_policy(struct vg_config *cfg, const char *value, struct vg_err *err) {
  if (strcmp(value, "hard") == 0)
    cfg->sm_policy = VG_SM_POLICY_HARD;
  else if (strcmp(value, "share") == 0)
    cfg->sm_policy = VG_SM_POLICY_SHARE;
  else
    return vg_err_set(err, "VGPU_SM_POLICY=%s: use 'hard' or 'share'", value);
  cfg->sm_policy_set = true;
  return 0;
}

static int apply_timeout(struct vg_config *cfg, const char *value, struct vg_err *err) {
  char *end;
  unsigned long s = strtoul(value, &end, 10);
  if (*value < '0' || *value > '9' || *end != '\0' || s > 3600)
    return vg_err_set(err, "VGPU_LIMITS_TIMEOUT=%s: use whole seconds from 0 to 3600", value);
  cfg->limits_timeout_s = (unsigned)s;
  return 0;
}

int vg_config_load(struct vg_config *cfg, char *const *envp, struct vg_err *err) {
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->region_path, sizeof(cfg->region_path), "%s", VG_DEFAULT_REGION_PATH);
  cfg->limits_timeout_s = 30;
  bool mem_global_set = false, sm_global_set = false;
  uint64_t mem_global = 0;
  unsigned sm_global = 0;
  for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
    const char *e = envp[i], *v;
    int index = 0, rc = 0;
    if ((v = match(e, MEM_VAR, &index)) != NULL)
      rc = apply_mem(cfg, e, index, v, &mem_global_set, &mem_global, err);
    else if ((v = match(e, SM_VAR, &index)) != NULL)
      rc = apply_sm(cfg, e, index, v, &sm_global_set, &sm_global, err);
    else if (strncmp(e, "VGPU_MANAGED_MEMORY=", 20) == 0)
      rc = apply_managed(cfg, e + 20, err);
    else if (strncmp(e, "VGPU_SM_POLICY=", 15) == 0)
      rc = apply_policy(cfg, e + 15, err);
    else if (strncmp(e, "VGPU_LIMITS_TIMEOUT=", 20) == 0)
      rc = apply_timeout(cfg, e + 20, err);
    else if (strncmp(e, "CUDA_DEVICE_MEMORY_SHARED_CACHE=", 32) == 0 && e[32] != '\0')
      snprintf(cfg->region_path, sizeof(cfg->region_path), "%s", e + 32);
    if (rc != 0) return rc;
  }
  for (int d = 0; d < VG_MAX_DEVICES; d++) {
    if (!cfg->mem_set[d] && mem_global_set) cfg->mem_set[d] = true, cfg->mem_limit[d] = mem_global;
    if (!cfg->sm_set[d] && sm_global_set) cfg->sm_set[d] = true, cfg->sm_limit[d] = sm_global;
  }
  return 0;
}

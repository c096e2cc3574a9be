/* resources.c -- see resources.h. */
#include "resources.h"

#include <stdio.h>
#include <string.h>

void vg_wh_resources_default(struct vg_wh_resources *r, const struct vg_resource_names *names) {
  r->n = 0;
  for (int role = 0; role < VG_ROLE_COUNT && r->n < VG_WH_RESOURCES_MAX; role++)
    snprintf(r->name[r->n++], sizeof(r->name[0]), "%s",
             vg_resource_name(names, (enum vg_role)role));
}

/* One entry [p, p+len) into r; spaces around it already trimmed. */
static int add(struct vg_wh_resources *r, const char *p, size_t len, struct vg_err *err) {
  if (len == 0) return vg_err_set(err, "--resources: an empty name in the list");
  if (len >= VG_WH_RESOURCE_NAME_MAX || memchr(p, '/', len) == NULL)
    return vg_err_set(err, "--resources: \"%.*s\" is not an extended resource name (domain/name)",
                      (int)(len > 80 ? 80 : len), p);
  if (r->n == VG_WH_RESOURCES_MAX)
    return vg_err_set(err, "--resources: more than %d names", VG_WH_RESOURCES_MAX);
  memcpy(r->name[r->n], p, len);
  r->name[r->n++][len] = '\0';
  return 0;
}

int vg_wh_resources_parse(const char *list, struct vg_wh_resources *r, struct vg_err *err) {
  r->n = 0;
  for (const char *p = list;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma != NULL ? comma : p + strlen(p);
    while (p < end && *p == ' ') p++;
    while (end > p && end[-1] == ' ') end--;
    if (add(r, p, (size_t)(end - p), err) != 0) return -1;
    if (comma == NULL) return 0;
    p = comma + 1;
  }
}

bool vg_wh_resources_has(const struct vg_wh_resources *r, const char *name) {
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->name[i], name) == 0) return true;
  return false;
}

/* writers.c -- see writers.h. */
#include "writers.h"

#include <stdio.h>
#include <string.h>

int vg_wh_users_add(struct vg_wh_users *u, const char *flag, const char *name, struct vg_err *err) {
  size_t len = strlen(name);
  if (len == 0) return vg_err_set(err, "%s: an empty user name", flag);
  if (len >= VG_WH_USER_MAX)
    return vg_err_set(err, "%s: \"%.60s...\" is longer than %d bytes", flag, name,
                      VG_WH_USER_MAX - 1);
  if (u->n == VG_WH_USERS_MAX)
    return vg_err_set(err, "%s: more than %d users", flag, VG_WH_USERS_MAX);
  memcpy(u->name[u->n++], name, len + 1);
  return 0;
}

static void fill(struct vg_wh_users *u, const char *name) {
  if (u->n == 0) vg_wh_users_add(u, "", name, NULL); /* a constant that fits */
}

void vg_wh_writers_default(struct vg_wh_writers *w) {
  fill(&w->scheduler, VG_WH_DEFAULT_SCHEDULER_USER);
  fill(&w->node, VG_WH_DEFAULT_NODE_USER);
}

bool vg_wh_users_has(const struct vg_wh_users *u, const char *user) {
  for (int i = 0; user != NULL && i < u->n; i++)
    if (strcmp(u->name[i], user) == 0) return true;
  return false;
}

void vg_wh_users_list(const struct vg_wh_users *u, char *out, size_t len) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < u->n && at < len; i++) {
    int n = snprintf(out + at, len - at, "%s%s", i > 0 ? ", " : "", u->name[i]);
    at += n > 0 ? (size_t)n : 0;
  }
  if (at >= len && len > 4) memcpy(out + len - 4, "...", 4);
}

/* slot.c -- see slot.h. */
#include "slot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int vg_slot_name(const char *const *ids, size_t n, char out[17]) {
  if (n == 0 || ids == NULL) return -1;
  const char **sorted = malloc(n * sizeof(*sorted));
  if (sorted == NULL) return -1;
  memcpy(sorted, ids, n * sizeof(*sorted));
  qsort(sorted, n, sizeof(*sorted), cmp_str);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    for (const char *s = sorted[i]; *s != '\0'; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
  }
  free(sorted);
  snprintf(out, 17, "%016llx", (unsigned long long)h);
  return 0;
}

bool vg_slot_name_valid(const char *name) {
  if (strlen(name) != 16) return false;
  for (const char *p = name; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

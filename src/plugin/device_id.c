/*
 * device_id.c -- "<GPU UUID>::<n>" written and read (device_id.h).
 */
#include "device_id.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEP "::"

bool vg_device_id_format(char *out, size_t len, const char *uuid, uint64_t n) {
  int k = snprintf(out, len, "%s" SEP "%llu", uuid, (unsigned long long)n);
  return k > 0 && (size_t)k < len;
}

bool vg_device_id_parse(const char *id, size_t *uuid_len, uint64_t *n) {
  const char *sep = strstr(id, SEP);
  if (sep == NULL || sep == id) return false;
  const char *num = sep + strlen(SEP);
  if (*num < '0' || *num > '9') return false; /* strtoull would take a sign or spaces */
  char *end;
  errno = 0;
  unsigned long long v = strtoull(num, &end, 10);
  if (*end != '\0' || errno != 0) return false;
  *uuid_len = (size_t)(sep - id);
  *n = v;
  return true;
}

bool vg_device_id_on(const char *id, const char *uuid) {
  size_t ulen;
  uint64_t n;
  return vg_device_id_parse(id, &ulen, &n) && strlen(uuid) == ulen && strncmp(id, uuid, ulen) == 0;
}

/* fuzz_plugin_config.c -- libFuzzer target for the device plugin's YAML
 * configuration: arbitrary bytes must be accepted or rejected with a
 * "name:line:column: reason" message, never crash or leak. What it accepts
 * also goes through the dialect helpers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "advertise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct vg_plugin_config cfg;
  struct vg_err err;
  err.msg[0] = '\0';
  if (vg_plugin_config_parse_string((const char *)data, size, "f", &cfg, &err) != 0) {
    if (strncmp(err.msg, "f:", 2) != 0) abort();
    return 0;
  }
  struct vg_advertised a[VG_ADVERTISED_MAX];
  int n = vg_dialect_advertise(&cfg, 16ULL << 30, 1, a);
  if (n < 1 || n > VG_ADVERTISED_MAX) abort();
  for (int i = 0; i < n; i++) {
    struct vg_container_limits l;
    vg_dialect_container_limits(&cfg, a[i].name, 1 + (size % 3), 16ULL << 30, &l, &err);
  }
  vg_plugin_config_free(&cfg);
  return 0;
}

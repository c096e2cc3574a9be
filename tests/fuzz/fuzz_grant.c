/* fuzz_grant.c -- libFuzzer target for the grant (grant.h): any bytes are
 * either refused with a message or parsed into a grant that holds what the
 * header promises (1..16 GPUs, distinct GPU- UUIDs, cores below 100, a known
 * policy); and a parsed grant, formatted and parsed again, is the same
 * struct -- what the agent writes is what libvgpu reads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"

static void check(const struct vg_grant *g) {
  if (g->count < 1 || g->count > VG_MAX_DEVICES) abort();
  for (unsigned i = 0; i < g->count; i++) {
    const struct vg_grant_gpu *gpu = &g->gpu[i];
    if (strncmp(gpu->uuid, "GPU-", 4) != 0 || memchr(gpu->uuid, '\0', VG_UUID_LEN) == NULL) abort();
    if (strchr(gpu->uuid, ' ') != NULL || strchr(gpu->uuid, '\n') != NULL) abort();
    if (gpu->cores >= 100) abort(); /* 100 is stored as 0 */
    if (gpu->policy != VG_SM_POLICY_HARD && gpu->policy != VG_SM_POLICY_SHARE) abort();
    if (vg_grant_find(g, gpu->uuid) != gpu) abort(); /* listed once */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct vg_grant g, again;
  struct vg_err err;
  err.msg[0] = '\0';
  if (vg_grant_parse((const char *)data, size, &g, &err) != 0) {
    if (err.msg[0] == '\0') abort(); /* a refusal always says why */
    return 0;
  }
  if (size > VG_GRANT_MAX_BYTES || memchr(data, '\0', size) != NULL) abort();
  check(&g);
  static char text[VG_GRANT_MAX_BYTES];
  int len = vg_grant_format(&g, text, sizeof(text));
  if (len <= 0 || (size_t)len != strlen(text)) abort();
  if (vg_grant_parse(text, (size_t)len, &again, &err) != 0) abort();
  if (memcmp(&g, &again, sizeof(g)) != 0) abort();
  return 0;
}

/* fuzz_config.c -- libFuzzer target for the environment reader: the input
 * is split into NUL-separated "NAME=VALUE" entries (names drawn from the
 * real variables so the fuzzer reaches the value parsers quickly). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *const g_names[] = {
    "CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_", "CUDA_DEVICE_SM_LIMIT",
    "CUDA_DEVICE_SM_LIMIT_",    "VGPU_MANAGED_MEMORY",       "CUDA_DEVICE_MEMORY_SHARED_CACHE",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  enum { MAX = 16 };
  char *env[MAX + 1];
  int n = 0;
  size_t pos = 0;
  while (pos < size && n < MAX) {
    const char *name = g_names[data[pos++] % (sizeof(g_names) / sizeof(g_names[0]))];
    size_t end = pos;
    while (end < size && data[end] != 0) end++;
    size_t len = strlen(name) + (end - pos) + 1;
    env[n] = malloc(len);
    memcpy(env[n], name, strlen(name));
    memcpy(env[n] + strlen(name), data + pos, end - pos);
    env[n][len - 1] = '\0';
    n++;
    pos = end + 1;
  }
  env[n] = NULL;
  struct vg_config cfg;
  struct vg_err err;
  if (vg_config_load(&cfg, env, &err) != 0 && err.msg[0] == '\0') abort();
  for (int i = 0; i < n; i++) free(env[i]);
  return 0;
}

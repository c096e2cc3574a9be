/* test_hook_table.c -- libvgpu finds hooks by binary search, so the X-macro
 * lists must stay in strcmp order; and every hooked name must be a function
 * the ABI header declares (the build checks that part). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hooks.h"

#define NAME(n) #n,
static const char *const g_names[] = {VG_CUDA_HOOKS(NAME) VG_NVML_HOOKS(NAME)};

static void test_sorted(void **s) {
  (void)s;
  for (size_t i = 1; i < sizeof(g_names) / sizeof(g_names[0]); i++)
    if (strcmp(g_names[i - 1], g_names[i]) >= 0)
      fail_msg("hook list out of order: %s before %s", g_names[i - 1], g_names[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sorted)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

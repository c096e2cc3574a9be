/* test_procaddr_table.c -- cuGetProcAddress's fallback table (g_variants in
 * src/lib/procaddr.c) against the hook list (VG_CUDA_HOOKS in
 * src/lib/hooks.h). A hook missing from the table is a function a program
 * fetching it through cuGetProcAddress may get unhooked when the driver
 * answers with a non-exported pointer; a table entry that is no hook would
 * hand the program NULL. Adding an interposed function touches both lists
 * (docs/architecture.md, "A new interposed CUDA function"), so this test
 * keeps them in step.
 *
 * procaddr.c is included, not linked, to read its static table; the few
 * driver.c functions it calls are stubbed below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "../../src/lib/procaddr.c"

/* driver.c's part, as procaddr.c needs it; never called by the tests. */
struct vg_real_cuda vg_cuda;
bool vg_cuda_load(void) { return false; }
void *vg_hook_by_name(const char *name) { return (void *)name; }
void *vg_hook_by_real(const void *real) { return (void *)real; }

#define NAME(n) #n,
static const char *const g_cuda_hooks[] = {VG_CUDA_HOOKS(NAME)};
#define N_HOOKS (sizeof(g_cuda_hooks) / sizeof(g_cuda_hooks[0]))
#define N_VARIANTS (sizeof(g_variants) / sizeof(g_variants[0]))

static bool in_variants(const char *name) {
  for (size_t i = 0; i < N_VARIANTS; i++)
    if (strcmp(g_variants[i].name, name) == 0 ||
        (g_variants[i].ptsz != NULL && strcmp(g_variants[i].ptsz, name) == 0))
      return true;
  return false;
}

static bool is_hook(const char *name) {
  for (size_t i = 0; i < N_HOOKS; i++)
    if (strcmp(g_cuda_hooks[i], name) == 0) return true;
  return false;
}

/* Every CUDA hook is an export the table can answer with. */
static void test_every_hook_in_table(void **s) {
  (void)s;
  int missing = 0;
  for (size_t i = 0; i < N_HOOKS; i++)
    if (!in_variants(g_cuda_hooks[i])) {
      print_error("%s is in VG_CUDA_HOOKS but not in procaddr.c's g_variants\n", g_cuda_hooks[i]);
      missing++;
    }
  assert_int_equal(missing, 0);
}

/* Every export the table names is a hook (vg_hook_by_name finds it). */
static void test_every_entry_hooked(void **s) {
  (void)s;
  int stray = 0;
  for (size_t i = 0; i < N_VARIANTS; i++) {
    const struct variant *v = &g_variants[i];
    if (!is_hook(v->name) || (v->ptsz != NULL && !is_hook(v->ptsz))) {
      print_error("g_variants names %s/%s, not both in VG_CUDA_HOOKS\n", v->name,
                  v->ptsz ? v->ptsz : "-");
      stray++;
    }
  }
  assert_int_equal(stray, 0);
}

/* Each entry is what the table chooses at its first version, and its
 * per-thread form with the flag. */
static void test_each_entry_chosen(void **s) {
  (void)s;
  for (size_t i = 0; i < N_VARIANTS; i++) {
    const struct variant *v = &g_variants[i];
    assert_string_equal(table_choice(v->base, v->since, 0), v->name);
    const char *ptsz =
        table_choice(v->base, v->since, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    assert_string_equal(ptsz, v->ptsz != NULL ? v->ptsz : v->name);
  }
  assert_null(table_choice("cuMemAlloc", 3010, 0)); /* before cuMemAlloc_v2 */
  assert_null(table_choice("cuNotAFunction", 13000, 0));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_hook_in_table),
                                     cmocka_unit_test(test_every_entry_hooked),
                                     cmocka_unit_test(test_each_entry_chosen)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

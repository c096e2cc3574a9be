/* test_alloc_table.c -- the allocation table against a plain reference
 * model under a long random sequence of puts, takes and gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "alloc_table.h"

#define KEYS 3000

static void test_random_against_model(void **s) {
  (void)s;
  static int64_t model[KEYS][2]; /* [key][kind-1]: bytes, -1 absent */
  for (int i = 0; i < KEYS; i++) model[i][0] = model[i][1] = -1;
  srand(42);
  for (int step = 0; step < 200000; step++) {
    int k = rand() % KEYS, kind = 1 + rand() % 2, op = rand() % 3;
    uint64_t key = 0x7f0000000000ULL + (uint64_t)k * 0x200000ULL;
    struct vg_alloc got, old;
    if (op == 0) {
      int rc =
          vg_alloc_put(kind, key, (struct vg_alloc){.dev = kind, .bytes = (uint64_t)step}, &old);
      assert_int_equal(rc, model[k][kind - 1] >= 0 ? 1 : 0);
      if (rc == 1) assert_int_equal(old.bytes, model[k][kind - 1]);
      model[k][kind - 1] = step;
    } else {
      bool found = op == 1 ? vg_alloc_take(kind, key, &got) : vg_alloc_get(kind, key, &got);
      assert_int_equal(found, model[k][kind - 1] >= 0);
      if (found) {
        assert_int_equal(got.bytes, model[k][kind - 1]);
        assert_int_equal(got.dev, kind);
      }
      if (op == 1) model[k][kind - 1] = -1;
    }
  }
  vg_alloc_reset();
  struct vg_alloc got;
  assert_false(vg_alloc_get(1, 0x7f0000000000ULL, &got));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_random_against_model)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

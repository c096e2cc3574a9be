/* fuzz_assignment.c -- libFuzzer target for the vgpu.io/assigned parser: any
 * input either parses into an assignment whose every value is in range and
 * which the writer turns back into text that parses to the same thing, or
 * fails with a message and leaves nothing allocated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "assignment.h"

static void check_same(const struct vg_assignment *a, const struct vg_assignment *b) {
  if (a->nctrs != b->nctrs || strcmp(a->node, b->node) != 0) abort();
  for (int i = 0; i < a->nctrs; i++) {
    const struct vg_assign_ctr *x = &a->ctr[i], *y = &b->ctr[i];
    if (strcmp(x->name, y->name) != 0 || strcmp(x->resource, y->resource) != 0) abort();
    if (x->ngpus != y->ngpus || x->ngpus < 1 || x->ngpus > VG_ASSIGN_MAX_GPUS) abort();
    for (int k = 0; k < x->ngpus; k++) {
      const struct vg_assign_gpu *g = &x->gpu[k], *h = &y->gpu[k];
      if (g->memory < 1 || g->cores < 0 || g->cores > 100 || g->index < 0) abort();
      if (strcmp(g->uuid, h->uuid) != 0 || g->memory != h->memory || g->cores != h->cores ||
          g->index != h->index)
        abort();
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  struct vg_assignment a, b;
  struct vg_err err = {""};
  if (vg_assign_parse(text, &a, &err) == 0) {
    json_object *o = vg_assign_to_json(&a, &err);
    if (o == NULL) abort(); /* what parsed must be writable */
    if (vg_assign_parse(json_object_to_json_string(o), &b, &err) != 0) abort();
    check_same(&a, &b);
    vg_assign_free(&b);
    json_object_put(o);
    vg_assign_free(&a);
  } else if (err.msg[0] == '\0' || a.ctr != NULL) {
    abort(); /* an error must say why, and free what it parsed */
  }
  free(text);
  return 0;
}

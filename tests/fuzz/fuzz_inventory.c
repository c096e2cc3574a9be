/* fuzz_inventory.c -- libFuzzer target for the vgpu.io/gpu-inventory codec
 * (src/k8s/gpu_inventory.c): any input either parses into values in range,
 * which the writer turns into a text that parses back to the same values
 * and is itself written the same again, or fails with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_inventory.h"

static bool in_range(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

static void check_values(const struct vg_inv *inv) {
  if (!in_range(inv->context_reserve, 0, VG_INV_MAX_BYTES)) abort();
  if (!in_range(inv->ngpus, 0, VG_INV_MAX_GPUS)) abort();
  for (int i = 0; i < inv->ngpus; i++) {
    const struct vg_inv_gpu *g = &inv->gpu[i];
    if (g->uuid[0] == '\0' || !in_range(g->memory, 0, VG_INV_MAX_BYTES)) abort();
    if (!in_range(g->numa, -1, 65535) || !in_range(g->nres, 0, VG_INV_MAX_RES)) abort();
    for (int k = 0; k < g->nres; k++) {
      const struct vg_inv_resource *r = &g->res[k];
      if (r->name[0] == '\0' || r->dialect[0] == '\0') abort();
      if (r->count < 0 || !in_range(r->unit, 0, VG_INV_MAX_BYTES)) abort();
      if (!in_range(r->memory, -1, VG_INV_MAX_BYTES) || r->cores < -1 || r->max_vgpus < -1) abort();
    }
  }
}

/* What a reader sees in a and b is the same (the reason of a healthy GPU is
 * not written, so not compared). */
static void check_same(const struct vg_inv *a, const struct vg_inv *b) {
  if (strcmp(a->node, b->node) != 0 || a->context_reserve != b->context_reserve ||
      a->ngpus != b->ngpus)
    abort();
  for (int i = 0; i < a->ngpus; i++) {
    const struct vg_inv_gpu *x = &a->gpu[i], *y = &b->gpu[i];
    if (x->index != y->index || strcmp(x->uuid, y->uuid) != 0 || strcmp(x->type, y->type) != 0 ||
        x->memory != y->memory || x->numa != y->numa || x->healthy != y->healthy ||
        x->nres != y->nres || (!x->healthy && strcmp(x->reason, y->reason) != 0))
      abort();
    if (memcmp(x->res, y->res, (size_t)x->nres * sizeof(x->res[0])) != 0) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  struct vg_inv a, b;
  struct vg_err err = {""};
  if (vg_inv_parse(text, &a, &err) != 0) {
    if (err.msg[0] == '\0') abort(); /* a refusal says why */
    vg_inv_free(&a);
    free(text);
    return 0;
  }
  check_values(&a);
  json_object *doc = vg_inv_to_json(&a, &err);
  if (doc == NULL) abort(); /* what was read can be written */
  char *out = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
  json_object_put(doc);
  if (out == NULL || vg_inv_parse(out, &b, &err) != 0) abort();
  check_same(&a, &b);
  json_object *again = vg_inv_to_json(&b, &err);
  if (again == NULL ||
      strcmp(json_object_to_json_string_ext(again, JSON_C_TO_STRING_PLAIN), out) != 0)
    abort(); /* the writer is a fixed point */
  json_object_put(again);
  free(out);
  vg_inv_free(&a);
  vg_inv_free(&b);
  free(text);
  return 0;
}

/*
 * test_gpu_inventory.c -- the vgpu.io/gpu-inventory codec
 * (src/k8s/gpu_inventory.c): what the writer writes, byte for byte; that it
 * reads back as written; the defaults of the optional fields; and every way
 * the reader refuses a document, each naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_inventory.h"

#define GIB (1024LL * 1024 * 1024)

/* Two GPUs: one healthy with three dialects, one lost on NUMA node 1. */
static void sample(struct vg_inv *inv) {
  memset(inv, 0, sizeof(*inv));
  snprintf(inv->node, sizeof(inv->node), "node1");
  inv->context_reserve = 536870912;
  struct vg_inv_gpu *g = vg_inv_add_gpu(inv);
  assert_non_null(g);
  snprintf(g->uuid, sizeof(g->uuid), "GPU-a");
  snprintf(g->type, sizeof(g->type), "NVIDIA A100");
  g->memory = 16 * GIB;
  struct vg_inv_resource *r = vg_inv_add_resource(g);
  snprintf(r->name, sizeof(r->name), "nvidia.com/vgpu");
  snprintf(r->dialect, sizeof(r->dialect), "vgpu");
  r->count = 4;
  r->memory = 16 * GIB;
  r->cores = 100;
  r = vg_inv_add_resource(g);
  snprintf(r->name, sizeof(r->name), "aliyun.com/gpu-mem");
  snprintf(r->dialect, sizeof(r->dialect), "gpushare");
  r->count = 16;
  r->unit = GIB;
  r = vg_inv_add_resource(g);
  snprintf(r->name, sizeof(r->name), "volcano.sh/gpu-mem.128Mi");
  snprintf(r->dialect, sizeof(r->dialect), "cce");
  r->count = 128;
  r->unit = 134217728;
  r->max_vgpus = 20;
  g = vg_inv_add_gpu(inv);
  snprintf(g->uuid, sizeof(g->uuid), "GPU-b");
  snprintf(g->type, sizeof(g->type), "Tesla T4");
  g->memory = 15 * GIB;
  g->numa = 1;
  g->healthy = false;
  snprintf(g->reason, sizeof(g->reason), "lost");
}

/* json-c writes "/" as "\\/", as it always has in this annotation. */
static const char sample_text[] =
    "{\"version\":1,\"node\":\"node1\",\"contextReserve\":536870912,\"gpus\":["
    "{\"index\":0,\"uuid\":\"GPU-a\",\"type\":\"NVIDIA A100\",\"memory\":17179869184,"
    "\"numa\":null,\"health\":\"Healthy\",\"resources\":["
    "{\"name\":\"nvidia.com\\/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"unit\":0,"
    "\"memory\":17179869184,\"cores\":100},"
    "{\"name\":\"aliyun.com\\/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,\"unit\":1073741824},"
    "{\"name\":\"volcano.sh\\/gpu-mem.128Mi\",\"dialect\":\"cce\",\"count\":128,"
    "\"unit\":134217728,\"maxVgpus\":20}]},"
    "{\"index\":1,\"uuid\":\"GPU-b\",\"type\":\"Tesla T4\",\"memory\":16106127360,\"numa\":1,"
    "\"health\":\"Unhealthy\",\"reason\":\"lost\",\"resources\":[]}]}";

/* The writer's text is the schema of docs/inventory.md, keys in its order,
 * and reads back field for field. */
static void test_round_trip(void **s) {
  (void)s;
  struct vg_inv inv, back;
  struct vg_err err = {""};
  sample(&inv);
  json_object *doc = vg_inv_to_json(&inv, &err);
  assert_non_null(doc);
  const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
  assert_string_equal(text, sample_text);
  assert_int_equal(vg_inv_parse(text, &back, &err), 0);
  json_object_put(doc);
  assert_string_equal(back.node, "node1");
  assert_int_equal(back.context_reserve, 536870912);
  assert_int_equal(back.ngpus, 2);
  for (int i = 0; i < 2; i++) {
    const struct vg_inv_gpu *a = &inv.gpu[i], *b = &back.gpu[i];
    assert_int_equal(a->index, b->index);
    assert_string_equal(a->uuid, b->uuid);
    assert_string_equal(a->type, b->type);
    assert_int_equal(a->memory, b->memory);
    assert_int_equal(a->numa, b->numa);
    assert_int_equal(a->healthy, b->healthy);
    assert_string_equal(a->reason, b->reason);
    assert_int_equal(a->nres, b->nres);
    for (int k = 0; k < a->nres; k++) {
      const struct vg_inv_resource *ra = &a->res[k], *rb = &b->res[k];
      assert_string_equal(ra->name, rb->name);
      assert_string_equal(ra->dialect, rb->dialect);
      assert_int_equal(ra->count, rb->count);
      assert_int_equal(ra->unit, rb->unit);
      assert_int_equal(ra->memory, rb->memory);
      assert_int_equal(ra->cores, rb->cores);
      assert_int_equal(ra->max_vgpus, rb->max_vgpus);
    }
  }
  vg_inv_free(&inv);
  vg_inv_free(&back);
}

/* A healthy GPU's reason is not written: the reason is why it is not. */
static void test_reason_only_when_unhealthy(void **s) {
  (void)s;
  struct vg_inv inv = {.ngpus = 0};
  struct vg_err err = {""};
  struct vg_inv_gpu *g = vg_inv_add_gpu(&inv);
  snprintf(g->uuid, sizeof(g->uuid), "GPU-a");
  snprintf(g->reason, sizeof(g->reason), "xid 79");
  json_object *doc = vg_inv_to_json(&inv, &err);
  assert_null(strstr(json_object_to_json_string(doc), "xid"));
  json_object_put(doc);
  vg_inv_free(&inv);
}

/* Fields only some writers or dialects write: their absence reads as the
 * defaults docs/inventory.md gives; unknown keys are ignored. */
static void test_defaults(void **s) {
  (void)s;
  struct vg_inv inv;
  struct vg_err err = {""};
  assert_int_equal(vg_inv_parse("{\"version\":1,\"later\":{\"x\":1},\"gpus\":["
                                "{\"uuid\":\"GPU-a\",\"memory\":0,\"health\":\"Healthy\"},"
                                "{\"uuid\":\"GPU-b\",\"memory\":1,\"health\":\"Degraded\","
                                "\"resources\":[{\"name\":\"x.io/y\",\"dialect\":\"future\"}]}]}",
                                &inv, &err),
                   0);
  assert_string_equal(inv.node, "");
  assert_int_equal(inv.context_reserve, 0);
  assert_int_equal(inv.ngpus, 2);
  assert_int_equal(inv.gpu[1].index, 1); /* its position */
  assert_string_equal(inv.gpu[0].type, "");
  assert_int_equal(inv.gpu[0].numa, -1);
  assert_true(inv.gpu[0].healthy);
  assert_int_equal(inv.gpu[0].nres, 0);
  assert_false(inv.gpu[1].healthy); /* any word but Healthy */
  const struct vg_inv_resource *r = &inv.gpu[1].res[0];
  assert_string_equal(r->dialect, "future"); /* kept: the reader decides */
  assert_int_equal(r->count, 0);
  assert_int_equal(r->unit, 0);
  assert_int_equal(r->memory, -1);
  assert_int_equal(r->cores, -1);
  assert_int_equal(r->max_vgpus, -1);
  vg_inv_free(&inv);
}

static void refused(const char *text, const char *words) {
  struct vg_inv inv;
  struct vg_err err = {""};
  assert_int_equal(vg_inv_parse(text, &inv, &err), -1);
  vg_inv_free(&inv);
  if (strstr(err.msg, words) == NULL)
    fail_msg("\"%.200s\": \"%s\" lacks \"%s\"", text ? text : "(null)", err.msg, words);
}

/* A document around one GPU's fields, or one resource's. */
#define DOC(gpu) "{\"version\":1,\"gpus\":[" gpu "]}"
#define GPU(extra) "{\"uuid\":\"GPU-a\",\"memory\":1,\"health\":\"Healthy\"" extra "}"
#define RES(fields) DOC(GPU(",\"resources\":[{" fields "}]"))
#define NAMED(extra) RES("\"name\":\"n.io/r\",\"dialect\":\"vgpu\"" extra)

static void test_document_refusals(void **s) {
  (void)s;
  refused(NULL, "not a JSON object");
  refused("", "not a JSON object");
  refused("garbage", "not a JSON object");
  refused("[1]", "not a JSON object");
  refused("{\"gpus\":[]}", "version is missing");
  refused("{\"version\":\"1\",\"gpus\":[]}", "version is not an integer");
  refused("{\"version\":-1,\"gpus\":[]}", "version is -1, out of range");
  refused("{\"version\":2,\"gpus\":[]}", "version 2, this reader knows version 1");
  refused("{\"version\":1,\"node\":7,\"gpus\":[]}", "node is not a string");
  char big[400];
  snprintf(big, sizeof(big), "{\"version\":1,\"node\":\"%0300d\",\"gpus\":[]}", 0);
  refused(big, "node is longer than 253 bytes");
  refused("{\"version\":1,\"contextReserve\":1.5,\"gpus\":[]}", "contextReserve is not an integer");
  refused("{\"version\":1,\"contextReserve\":-1,\"gpus\":[]}",
          "contextReserve is -1, out of range");
  refused("{\"version\":1,\"contextReserve\":1125899906842625,\"gpus\":[]}",
          "contextReserve is 1125899906842625, out of range");
  refused("{\"version\":1}", "gpus is missing");
  refused("{\"version\":1,\"gpus\":{}}", "gpus is not an array");
  size_t len = 64 + 3 * (VG_INV_MAX_GPUS + 1);
  char *many = malloc(len);
  int n = snprintf(many, len, "{\"version\":1,\"gpus\":[");
  for (int i = 0; i <= VG_INV_MAX_GPUS; i++)
    n += snprintf(many + n, len - (size_t)n, "%s1", i ? "," : "");
  snprintf(many + n, len - (size_t)n, "]}");
  refused(many, "gpus has more than 256 entries");
  free(many);
}

static void test_gpu_refusals(void **s) {
  (void)s;
  refused(DOC("7"), "gpus[0] is not an object");
  refused(DOC(GPU("") "," GPU(",\"index\":\"1\"")), "gpus[1].index is not an integer");
  refused(DOC(GPU(",\"index\":-1")), "gpus[0].index is -1, out of range");
  refused(DOC("{\"memory\":1,\"health\":\"Healthy\"}"), "gpus[0].uuid is missing");
  refused(DOC(GPU(",\"uuid\":5")), "gpus[0].uuid is not a string");
  refused(DOC(GPU(",\"uuid\":\"\"")), "gpus[0].uuid is empty");
  char big[400];
  snprintf(big, sizeof(big), DOC(GPU(",\"uuid\":\"%0100d\"")), 0);
  refused(big, "gpus[0].uuid is longer than 95 bytes");
  refused(DOC(GPU(",\"type\":[]")), "gpus[0].type is not a string");
  snprintf(big, sizeof(big), DOC(GPU(",\"type\":\"%0100d\"")), 0);
  refused(big, "gpus[0].type is longer than 95 bytes");
  refused(DOC("{\"uuid\":\"GPU-a\",\"health\":\"Healthy\"}"), "gpus[0].memory is missing");
  refused(DOC(GPU(",\"memory\":\"16Gi\"")), "gpus[0].memory is not an integer");
  refused(DOC(GPU(",\"memory\":-5")), "gpus[0].memory is -5, out of range");
  refused(DOC(GPU(",\"memory\":18446744073709551615")), "gpus[0].memory is 18446744073709551615");
  refused(DOC(GPU(",\"numa\":\"0\"")), "gpus[0].numa is not an integer");
  refused(DOC(GPU(",\"numa\":-1")), "gpus[0].numa is -1, out of range");
  refused(DOC("{\"uuid\":\"GPU-a\",\"memory\":1}"), "gpus[0].health is missing");
  refused(DOC(GPU(",\"health\":true")), "gpus[0].health is not a string");
  refused(DOC(GPU(",\"health\":\"\"")), "gpus[0].health is empty");
  snprintf(big, sizeof(big), DOC(GPU(",\"health\":\"%040d\"")), 0);
  refused(big, "gpus[0].health is longer than 31 bytes");
  refused(DOC(GPU(",\"reason\":79")), "gpus[0].reason is not a string");
  snprintf(big, sizeof(big), DOC(GPU(",\"reason\":\"%070d\"")), 0);
  refused(big, "gpus[0].reason is longer than 63 bytes");
  refused(DOC(GPU(",\"resources\":{}")), "gpus[0].resources is not an array");
  refused(DOC(GPU(",\"resources\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]")),
          "gpus[0].resources has more than 16 entries");
}

static void test_resource_refusals(void **s) {
  (void)s;
  refused(DOC(GPU(",\"resources\":[\"vgpu\"]")), "gpus[0].resources[0] is not an object");
  refused(RES("\"dialect\":\"vgpu\""), "gpus[0].resources[0].name is missing");
  refused(RES("\"name\":1,\"dialect\":\"vgpu\""), "gpus[0].resources[0].name is not a string");
  refused(RES("\"name\":\"\",\"dialect\":\"vgpu\""), "gpus[0].resources[0].name is empty");
  char big[600];
  snprintf(big, sizeof(big), RES("\"name\":\"%0260d\",\"dialect\":\"vgpu\""), 0);
  refused(big, "gpus[0].resources[0].name is longer than 253 bytes");
  refused(RES("\"name\":\"n.io/r\""), "gpus[0].resources[0].dialect is missing");
  refused(RES("\"name\":\"n.io/r\",\"dialect\":\"\""), "gpus[0].resources[0].dialect is empty");
  snprintf(big, sizeof(big), RES("\"name\":\"n.io/r\",\"dialect\":\"%040d\""), 0);
  refused(big, "gpus[0].resources[0].dialect is longer than 31 bytes");
  refused(NAMED(",\"count\":\"4\""), "gpus[0].resources[0].count is not an integer");
  refused(NAMED(",\"count\":-1"), "gpus[0].resources[0].count is -1, out of range");
  refused(NAMED(",\"count\":2147483648"), "gpus[0].resources[0].count is 2147483648");
  refused(NAMED(",\"unit\":-5"), "gpus[0].resources[0].unit is -5, out of range");
  refused(NAMED(",\"memory\":1125899906842625"), "gpus[0].resources[0].memory is 1125899906842625");
  refused(NAMED(",\"cores\":-1"), "gpus[0].resources[0].cores is -1, out of range");
  refused(NAMED(",\"maxVgpus\":\"4\""), "gpus[0].resources[0].maxVgpus is not an integer");
}

/* The writer refuses what the reader would: nothing it publishes is
 * refused by the scheduler or inspect. */
static void test_writer_refusals(void **s) {
  (void)s;
  struct vg_inv inv;
  struct vg_err err = {""};
  sample(&inv);
  inv.gpu[1].uuid[0] = '\0';
  assert_null(vg_inv_to_json(&inv, &err));
  assert_non_null(strstr(err.msg, "gpus[1].uuid is empty"));
  vg_inv_free(&inv);
  sample(&inv);
  inv.gpu[0].res[1].unit = VG_INV_MAX_BYTES + 1;
  assert_null(vg_inv_to_json(&inv, &err));
  assert_non_null(strstr(err.msg, "gpus[0].resources[1].unit"));
  vg_inv_free(&inv);
}

static void test_limits(void **s) {
  (void)s;
  struct vg_inv inv = {.ngpus = 0};
  for (int i = 0; i < VG_INV_MAX_GPUS; i++) assert_non_null(vg_inv_add_gpu(&inv));
  assert_null(vg_inv_add_gpu(&inv));
  assert_int_equal(inv.gpu[VG_INV_MAX_GPUS - 1].index, VG_INV_MAX_GPUS - 1);
  for (int k = 0; k < VG_INV_MAX_RES; k++) assert_non_null(vg_inv_add_resource(&inv.gpu[0]));
  assert_null(vg_inv_add_resource(&inv.gpu[0]));
  vg_inv_free(&inv);
  assert_int_equal(inv.ngpus, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_reason_only_when_unhealthy),
      cmocka_unit_test(test_defaults),        cmocka_unit_test(test_document_refusals),
      cmocka_unit_test(test_gpu_refusals),    cmocka_unit_test(test_resource_refusals),
      cmocka_unit_test(test_writer_refusals), cmocka_unit_test(test_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

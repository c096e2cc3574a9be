/* fuzz_extender.c -- libFuzzer target for what vgpu-scheduler reads from the
 * kube-scheduler and the API: a Pod (its GPU requests and annotations) and a
 * node's vgpu.io/gpu-inventory, then the fit, the assignment bind would
 * write, the scoring view, and the text writer of the answers.
 *
 * Input: "<Pod JSON>\n--\n<inventory JSON>"; without the separator the whole
 * input is the Pod, fitted against a fixed two-GPU node that advertises
 * every dialect. Every parser either accepts or says why; whatever fits
 * must give GPUs in range, distinct within a container, an assignment the
 * plugin's parser accepts, and a core view in range; the writer's strings
 * must read back as they went in. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "assignment.h"
#include "extender_int.h"

static const char node_inventory[] =
    "{\"version\":1,\"node\":\"n\",\"contextReserve\":268435456,\"gpus\":["
    "{\"index\":0,\"uuid\":\"GPU-a\",\"type\":\"NVIDIA A100\",\"memory\":17179869184,"
    "\"health\":\"Healthy\",\"resources\":["
    "{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"memory\":17179869184,"
    "\"cores\":100},"
    "{\"name\":\"aliyun.com/gpu-mem\",\"dialect\":\"gpushare\",\"count\":16,\"unit\":1073741824},"
    "{\"name\":\"volcano.sh/gpu-mem.128Mi\",\"dialect\":\"cce\",\"count\":128,\"maxVgpus\":4},"
    "{\"name\":\"nvidia.com/gpu\",\"dialect\":\"timeSlicing\",\"count\":4,\"unit\":0}]},"
    "{\"index\":1,\"uuid\":\"GPU-b\",\"type\":\"Tesla T4\",\"memory\":16106127360,"
    "\"health\":\"Healthy\",\"resources\":["
    "{\"name\":\"nvidia.com/vgpu\",\"dialect\":\"vgpu\",\"count\":4,\"memory\":16106127360,"
    "\"cores\":100}]}]}";

static void check_writer(const char *s) {
  struct ext_out o = {0};
  ext_out_lit(&o, "[");
  ext_out_str(&o, s);
  ext_out_lit(&o, "]");
  char *text = ext_out_take(&o);
  if (text == NULL) return; /* out of memory */
  json_object *v = json_tokener_parse(text);
  if (v == NULL || strcmp(json_object_get_string(json_object_array_get_idx(v, 0)), s) != 0) abort();
  json_object_put(v);
  free(text);
}

static void check_fit(const struct pod_req *r, const struct node_view *v) {
  ext_picks picks;
  char why[512] = "";
  if (!ext_pod_fits(r, v, picks, why, sizeof(why))) {
    if (why[0] == '\0') abort(); /* a refusal says why */
    return;
  }
  for (int i = 0; i < r->n; i++)
    for (int k = 0; k < r->c[i].count; k++) {
      if (picks[i][k] < 0 || picks[i][k] >= v->n) abort();
      for (int j = 0; j < k; j++)
        if (picks[i][j] == picks[i][k]) abort(); /* a container's GPUs are distinct */
    }
  struct vg_err err = {""};
  json_object *a = ext_assignment("n", r, v, picks, &err);
  if (a == NULL) abort();
  struct vg_assignment back;
  if (vg_assign_parse(json_object_to_json_string(a), &back, &err) != 0) abort();
  vg_assign_free(&back);
  json_object_put(a);
  struct vg_node n;
  struct vg_pod p;
  ext_to_core(v, r, &n, &p);
  if (p.num_gpu < 0 || p.num_gpu > VG_SCHED_MAX_GPUS || n.ngpu != v->n) abort();
  if (p.num_gpu > 0 && (p.gpu_milli < 1 || p.gpu_milli > VG_MILLI)) abort();
  for (int g = 0; g < n.ngpu; g++)
    if (n.gpu_free[g] < 0 || n.gpu_free[g] > VG_MILLI) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  check_writer(text); /* up to the first NUL: any bytes at all */
  const char *inventory = node_inventory;
  char *sep = strstr(text, "\n--\n");
  if (sep != NULL) {
    *sep = '\0';
    inventory = sep + 4;
  }
  struct node_view v;
  char why[512] = "";
  if (ext_parse_inventory(inventory, &v, why, sizeof(why)) != 0) {
    if (why[0] == '\0') abort();
    free(text);
    return 0;
  }
  if (v.n < 0 || v.n > VG_SCHED_MAX_GPUS || v.reserve < 0) abort();
  json_object *pod = json_tokener_parse(text);
  static struct pod_req r; /* ~20 kB: not on the fuzzer's stack */
  why[0] = '\0';
  if (ext_parse_pod(pod, &r, why, sizeof(why)) == 0) {
    if (r.n < 0 || r.n > EXT_MAX_CTRS) abort();
    check_fit(&r, &v);
  } else if (why[0] == '\0') {
    abort();
  }
  json_object_put(pod);
  free(text);
  return 0;
}

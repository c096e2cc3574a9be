/*
 * report.c -- what `kubectl vgpu resize` tells the user.
 *
 * Amounts are per GPU, as the user gave them, next to what the container
 * had before the request ("was"), read from vgpu.io/assigned when the
 * request was written. A container whose GPUs hold different amounts shows
 * them per GPU, separated by '/'. A timeout names the party that has not
 * answered, since that is where to look: the node agent
 * (vgpu-device-plugin on the pod's node) acknowledges first, then
 * vgpu-scheduler accepts, then the node agent applies.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kubectl_vgpu.h"
#include "size.h"

/* "3000 MiB", or "2000 MiB/4000 MiB" when the GPUs differ. */
static void memory_text(const int64_t *mem, int n, char *buf, size_t len) {
  bool same = true;
  for (int i = 1; i < n; i++) same = same && mem[i] == mem[0];
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < (same ? 1 : n) && used < len; i++) {
    char one[32];
    vg_format_size((uint64_t)mem[i], one, sizeof(one));
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "/" : "", one);
  }
}

/* "30 %", or "30 %/50 %" when the GPUs differ; 0 (no compute limit) reads
 * "unlimited", as `vgpu status` says. */
static void cores_text(const int *cores, int n, char *buf, size_t len) {
  bool same = true;
  for (int i = 1; i < n; i++) same = same && cores[i] == cores[0];
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < (same ? 1 : n) && used < len; i++)
    used += (size_t)(cores[i] == 0
                         ? snprintf(buf + used, len - used, "%sunlimited", i ? "/" : "")
                         : snprintf(buf + used, len - used, "%s%d %%", i ? "/" : "", cores[i]));
}

/* "memory 3000 MiB, cores 30 % per GPU (was 2000 MiB, 30 %)" */
static void amounts(const struct kv_sent *s, char *buf, size_t len) {
  int64_t mem[VG_ASSIGN_MAX_GPUS] = {0}, was_mem[VG_ASSIGN_MAX_GPUS] = {0};
  int cores[VG_ASSIGN_MAX_GPUS] = {0}, was_cores[VG_ASSIGN_MAX_GPUS] = {0};
  int n = s->was.ngpus;
  for (int i = 0; i < n; i++) {
    mem[i] = vg_resize_memory(&s->req, &s->was.gpu[i]);
    cores[i] = vg_resize_cores(&s->req, &s->was.gpu[i]);
    was_mem[i] = s->was.gpu[i].memory;
    was_cores[i] = s->was.gpu[i].cores;
  }
  char m[256], c[256], wm[256], wc[256];
  memory_text(mem, n, m, sizeof(m));
  cores_text(cores, n, c, sizeof(c));
  memory_text(was_mem, n, wm, sizeof(wm));
  cores_text(was_cores, n, wc, sizeof(wc));
  snprintf(buf, len, "memory %s, cores %s per GPU (was %s, %s)", m, c, wm, wc);
}

void kv_report_applied(const struct kv_sent *s, FILE *out) {
  char a[1100];
  amounts(s, a, sizeof(a));
  fprintf(out, "pod/%s container %s resized: %s\n", s->pod, s->req.container, a);
}

void kv_report_requested(const struct kv_sent *s, FILE *out) {
  char a[1100];
  amounts(s, a, sizeof(a));
  fprintf(out, "pod/%s container %s: resize %s requested: %s; not waiting for the answer\n", s->pod,
          s->req.container, s->req.id, a);
}

static json_object *amounts_json(int64_t memory, int cores) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "memory", json_object_new_int64(memory));
  json_object_object_add(o, "cores", json_object_new_int(cores));
  return o;
}

void kv_report_json(const struct kv_sent *s, const struct vg_resize_status *status, FILE *out) {
  const struct vg_assign_gpu *g = &s->was.gpu[0];
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(s->req.id));
  json_object_object_add(
      o, "phase", status ? json_object_new_string(vg_resize_phase_name(status->phase)) : NULL);
  json_object_object_add(o, "reason", status ? json_object_new_string(status->reason) : NULL);
  json_object_object_add(o, "namespace", json_object_new_string(s->ns));
  json_object_object_add(o, "pod", json_object_new_string(s->pod));
  json_object_object_add(o, "container", json_object_new_string(s->req.container));
  json_object_object_add(o, "node", json_object_new_string(s->node));
  /* per GPU; the first GPU's where the container's GPUs differ */
  json_object_object_add(o, "memory", json_object_new_int64(vg_resize_memory(&s->req, g)));
  json_object_object_add(o, "cores", json_object_new_int(vg_resize_cores(&s->req, g)));
  json_object_object_add(o, "was", amounts_json(g->memory, g->cores));
  fprintf(out, "%s\n",
          json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
  json_object_put(o);
}

void kv_report_timeout(const struct kv_sent *s, const struct kv_progress *p, int timeout_s,
                       FILE *out) {
  fputs(KV_RESIZE_PREFIX, out);
  if (!p->acked && !p->answered)
    fprintf(out,
            "the node agent on node %s has not acknowledged resize %s within %d s "
            "(is vgpu-device-plugin running there?)",
            s->node, s->req.id, timeout_s);
  else if (!p->answered)
    fprintf(out,
            "vgpu-scheduler has not answered resize %s within %d s (the node agent on node %s "
            "acknowledged it; is vgpu-scheduler running?)",
            s->req.id, timeout_s, s->node);
  else
    fprintf(out,
            "the node agent on node %s has not applied resize %s within %d s "
            "(vgpu-scheduler accepted it)",
            s->node, s->req.id, timeout_s);
  fprintf(out,
          "\nThe request stays open and may still be answered: see the pod's "
          "annotation " VG_RESIZE_STATUS_ANNOTATION ".\n");
  if (p->last_error.msg[0]) fprintf(out, "Last failed read of the pod: %s\n", p->last_error.msg);
}

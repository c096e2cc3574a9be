/* metrics.c -- see metrics.h. */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>

char *vg_wh_metrics_render(const struct vg_wh_metrics *m) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f == NULL) return NULL;
  fprintf(f,
          "# HELP vgpu_webhook_reviews_total AdmissionReviews answered, by result (allowed: "
          "unchanged, mutated: routed to vgpu-scheduler, refused: allowed false, invalid: not "
          "an answerable review).\n# TYPE vgpu_webhook_reviews_total counter\n");
  for (int r = 0; r < VG_WH_R_COUNT; r++)
    fprintf(f, "vgpu_webhook_reviews_total{result=\"%s\"} %lu\n", vg_wh_result_name(r),
            atomic_load(&m->reviews[r]));
  fprintf(f,
          "# HELP vgpu_webhook_tls_reloads_total Serving certificates reloaded from changed "
          "files.\n# TYPE vgpu_webhook_tls_reloads_total counter\n"
          "vgpu_webhook_tls_reloads_total %lu\n"
          "# HELP vgpu_webhook_tls_reload_failures_total Changed certificate files that did not "
          "load (the previous pair stays).\n# TYPE vgpu_webhook_tls_reload_failures_total "
          "counter\nvgpu_webhook_tls_reload_failures_total %lu\n",
          atomic_load(&m->tls_reloads), atomic_load(&m->tls_reload_failures));
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* metrics.c -- see metrics.h. */
#include "metrics.h"

#include "prom.h"

char *vg_wh_metrics_render(const struct vg_wh_metrics *m) {
  struct vg_textbuf out = {0}, l = {0};
  vg_prom_family(&out, "vgpu_webhook_reviews_total", "counter",
                 "AdmissionReviews answered, by result (allowed: unchanged, mutated: routed to "
                 "vgpu-scheduler, refused: allowed false, invalid: not an answerable review).");
  for (int r = 0; r < VG_WH_R_COUNT; r++) {
    vg_textbuf_reset(&l);
    vg_prom_label(&l, "result", vg_wh_result_name(r));
    vg_prom_sample(&out, "vgpu_webhook_reviews_total", &l, "%lu", atomic_load(&m->reviews[r]));
  }
  vg_textbuf_free(&l);
  vg_prom_family(&out, "vgpu_webhook_tls_reloads_total", "counter",
                 "Serving certificates reloaded from changed files.");
  vg_prom_sample(&out, "vgpu_webhook_tls_reloads_total", NULL, "%lu", atomic_load(&m->tls_reloads));
  vg_prom_family(&out, "vgpu_webhook_tls_reload_failures_total", "counter",
                 "Changed certificate files that did not load (the previous pair stays).");
  vg_prom_sample(&out, "vgpu_webhook_tls_reload_failures_total", NULL, "%lu",
                 atomic_load(&m->tls_reload_failures));
  return vg_textbuf_take(&out, NULL);
}

/* audit_rules.c -- see audit_rules.h. */
#include "audit_rules.h"

static uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

enum vg_audit_change vg_audit_assess(const struct vg_audit_reading *r, uint64_t context_allowance,
                                     uint64_t tolerance, struct vg_audit_gpu_state *st) {
  bool was = st->flagged;
  if (!r->nvml_ok) {
    /* No reading: keep the last verdict rather than clear it on a hiccup. */
    return VG_AUDIT_SAME;
  }
  if (!r->held) {
    st->baseline = r->used;
    st->baseline_seen = true;
  }
  uint64_t contexts = (uint64_t)r->procs * context_allowance;
  if (r->procs != 0 && contexts / r->procs != context_allowance) contexts = UINT64_MAX;
  st->unaccounted = minus(minus(minus(r->used, st->baseline), r->charged), contexts);
  st->flagged = r->held && r->auditable && st->unaccounted > tolerance;
  if (st->flagged == was) return VG_AUDIT_SAME;
  return st->flagged ? VG_AUDIT_FLAGGED : VG_AUDIT_CLEARED;
}

bool vg_audit_unenforced(bool gpu_flagged, bool joined, double age_s, unsigned grace_s) {
  return gpu_flagged && !joined && age_s >= (double)grace_s;
}

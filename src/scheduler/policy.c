/*
 * policy.c -- the table of placement policies, looked up by name.
 */
#include <stddef.h>
#include <string.h>

#include "vg_sched.h"

static const struct vg_policy bestfit = {
    "bestfit", "least CPU+GPU leftover (paper's Best-fit baseline)", vg_score_bestfit};
static const struct vg_policy fgd = {"fgd", "fragmentation gradient descent (Weng et al., ATC'23)",
                                     vg_score_fgd};

static const struct vg_policy vgpu = {
    "vgpu",
    "FGD, on a CPU-aware measure chosen by the mix (FGD's if it pins GPU models); share ties "
    "by fit and Sum-of-Squares",
    vg_score_vgpu};

static const struct vg_policy binpack = {
    "binpack", "fullest node after placement (HAMi's node binpack)", vg_score_binpack};
static const struct vg_policy spread = {"spread", "emptiest node (HAMi's node spread)",
                                        vg_score_spread};

static const struct vg_policy *const all[] = {&bestfit, &fgd, &vgpu, &binpack, &spread, NULL};

const struct vg_policy *const *vg_policy_all(void) { return all; }

const struct vg_policy *vg_policy_find(const char *name) {
  for (int i = 0; all[i]; i++)
    if (strcmp(all[i]->name, name) == 0) return all[i];
  return NULL;
}

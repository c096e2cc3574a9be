/*
 * config.c -- which cluster and credentials: the kubeconfig kubectl itself
 * would use, so that `kubectl vgpu` talks to the same cluster as the
 * `kubectl` it was run from (the order of kubectl-inspect-gpushare, which
 * also falls back to the in-cluster service account when run in a pod).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kubectl_vgpu.h"

int kv_load_config(const char *kubeconfig, struct vg_k8s_config *cfg, struct vg_err *err) {
  const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
  char path[4096];
  if (kubeconfig != NULL) return vg_k8s_config_kubeconfig(cfg, kubeconfig, err);
  /* vg_k8s_config_load takes the first file of the list */
  if (env != NULL && *env != '\0') return vg_k8s_config_load(cfg, NULL, err);
  snprintf(path, sizeof(path), "%s/.kube/config", home != NULL ? home : "");
  if (home != NULL && access(path, F_OK) == 0) return vg_k8s_config_kubeconfig(cfg, path, err);
  if (getenv("KUBERNETES_SERVICE_HOST") != NULL) return vg_k8s_config_load(cfg, NULL, err);
  return vg_err_set(err,
                    "no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or create "
                    "~/.kube/config");
}

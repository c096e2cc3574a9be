/*
 * resize.c -- `kubectl vgpu resize`: from the command line to the exit
 * status.
 *
 *   1. options (resize_opts.c) and the kubeconfig (vg_k8s_config_kubectl, as kubectl picks one);
 *   2. the request, written on the pod once it is checked (request.c);
 *   3. unless --no-wait, the answer: the node agent acknowledges (and
 *      applies any decrease), vgpu-scheduler accepts or refuses, the node
 *      agent applies (wait.c);
 *   4. the outcome (report.c) and the exit status: 0 applied, 1 refused or
 *      failed, 2 nobody answered in time.
 *
 * This is the one place that prints errors: everything below returns them.
 */
#include <stdio.h>

#include "kubectl_vgpu.h"

/* -n, else the kubeconfig context's namespace, else "default", as kubectl. */
static const char *namespace_of(const struct kv_resize_opts *o, const struct vg_k8s_config *cfg) {
  if (o->ns != NULL) return o->ns;
  return cfg->namespace_ != NULL && cfg->namespace_[0] ? cfg->namespace_ : "default";
}

static int failed(int rc, const struct kv_sent *s, const struct vg_k8s_config *cfg,
                  const struct vg_err *err) {
  if (rc == VG_K8S_ENOTFOUND)
    fprintf(stderr, KV_RESIZE_PREFIX "pod \"%s\" not found in namespace \"%s\" (%s)\n", s->pod,
            s->ns, err->msg);
  else if (rc == VG_K8S_EUNREACHABLE)
    fprintf(stderr,
            KV_RESIZE_PREFIX
            "cannot reach the Kubernetes API server %s (from %s): %s\n"
            "Is the cluster running, and is the kubeconfig's server address right?\n",
            cfg->server, cfg->source, err->msg);
  else if (rc == VG_K8S_EUNAUTHORIZED)
    fprintf(stderr,
            KV_RESIZE_PREFIX
            "the API server %s refused the credentials from %s (resize needs get and patch "
            "on pods): %s\n",
            cfg->server, cfg->source, err->msg);
  else
    fprintf(stderr, KV_RESIZE_PREFIX "%s\n", err->msg);
  return KV_EXIT_FAIL;
}

static int answered(const struct kv_resize_opts *o, const struct kv_sent *s,
                    const struct vg_resize_status *st) {
  if (o->json) kv_report_json(s, st, stdout);
  if (st->phase == VG_RESIZE_APPLIED) {
    if (!o->json) kv_report_applied(s, stdout);
    return KV_EXIT_OK;
  }
  fprintf(stderr, KV_RESIZE_PREFIX "refused: %s\n",
          st->reason[0] ? st->reason : "(no reason given)");
  return KV_EXIT_FAIL;
}

static int resize(struct vg_k8s_client *c, const struct kv_resize_opts *o,
                  const struct vg_k8s_config *cfg) {
  struct kv_sent s = {.ns = namespace_of(o, cfg), .pod = o->pod};
  struct vg_err err = {""};
  int rc = kv_request_send(c, o, &s, &err);
  if (rc != 0) return failed(rc, &s, cfg, &err);
  if (o->no_wait) {
    if (o->json)
      kv_report_json(&s, NULL, stdout);
    else
      kv_report_requested(&s, stdout);
    return KV_EXIT_OK;
  }
  struct kv_progress p;
  rc = kv_wait(c, &s, o->timeout_s, &p, &err);
  if (rc == KV_EXIT_TIMEOUT) {
    kv_report_timeout(&s, &p, o->timeout_s, stderr);
    return KV_EXIT_TIMEOUT;
  }
  if (rc != 0) return failed(rc, &s, cfg, &err);
  return answered(o, &s, &p.status);
}

int kv_resize_main(int argc, char **argv) {
  struct kv_resize_opts o;
  bool done;
  int rc = kv_resize_parse(argc, argv, &o, &done);
  if (rc != 0 || done) return rc;
  struct vg_k8s_config cfg = {0};
  struct vg_err err = {""};
  struct vg_k8s_client *c = NULL;
  if (vg_k8s_config_kubectl(&cfg, o.kubeconfig, &err) == 0) c = vg_k8s_client_new(&cfg, &err);
  if (c == NULL) {
    fprintf(stderr, KV_RESIZE_PREFIX "%s\n", err.msg);
    vg_k8s_config_free(&cfg);
    return KV_EXIT_FAIL;
  }
  /* short requests: a hung read must not hold the poll far past --timeout */
  vg_k8s_client_set_timeouts(c, 15000, 5000);
  rc = resize(c, &o, &cfg);
  vg_k8s_client_free(c);
  vg_k8s_config_free(&cfg);
  return rc;
}

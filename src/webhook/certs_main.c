/*
 * certs_main.c -- `vgpu-webhook certs`: run once as a Kubernetes Job
 * (deploy/base/webhook.yaml) to make the serving certificate Secret and put
 * its CA into the MutatingWebhookConfiguration (certs_api.h), and with
 * --assignment-key-secret the Secret of the cluster's assignment key
 * (assign_key_secret.h); or, with --out-dir, only write the three PEM files
 * (local runs, tests, e2e).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign_key_secret.h"
#include "certs_api.h"
#include "log.h"
#include "main.h"
#include "opt.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: vgpu-webhook certs [--namespace NS] [--service NAME] [--secret NAME]\n"
      "                          [--webhook-config NAME] [--validating-config NAME]\n"
      "                          [--days N] [--kubeconfig FILE]\n"
      "                          [--assignment-key-secret NAME [--assignment-key-only]]\n"
      "                          [--out-dir DIR]\n"
      "  --namespace NS          the webhook Service's and the Secret's namespace\n"
      "                          (default vgpu-system)\n"
      "  --service NAME          the webhook Service; the certificate names NAME, NAME.NS,\n"
      "                          NAME.NS.svc, NAME.NS.svc.cluster.local (default vgpu-webhook)\n"
      "  --secret NAME           kubernetes.io/tls Secret to write: tls.crt, tls.key, ca.crt\n"
      "                          (default vgpu-webhook-tls); a valid one is kept\n"
      "  --webhook-config NAME   MutatingWebhookConfiguration whose caBundle is set\n"
      "                          (default vgpu-webhook)\n"
      "  --validating-config NAME  ValidatingWebhookConfiguration whose caBundle is set\n"
      "                          too (the guard, deploy/base: vgpu-guard; default none)\n"
      "  --days N                validity of a new CA and certificate (default 3650); an\n"
      "                          existing pair with under 30 days left is replaced\n"
      "  --assignment-key-secret NAME\n"
      "                          also make the Secret NAME in the namespace holding the\n"
      "                          cluster's assignment key (data.key: 32 random bytes), with\n"
      "                          which vgpu-scheduler signs vgpu.io/assigned; an existing one\n"
      "                          is kept (docs/security.md)\n"
      "  --assignment-key-only   make only that Secret: no certificate, no caBundle (when\n"
      "                          cert-manager issues the certificate)\n"
      "  --kubeconfig FILE       API access (default $KUBECONFIG, else in-cluster)\n"
      "  --out-dir DIR           only write DIR/ca.crt, DIR/tls.crt, DIR/tls.key; no API\n"
      "  --help, --version\n");
}

static int parse_days(const char *s, unsigned *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno != 0 || v < 31 || v > 36500) return -1;
  *out = (unsigned)v;
  return 0;
}

static int write_file(const char *dir, const char *name, const char *text, struct vg_err *err) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (f == NULL) return vg_err_set(err, "%s: %s", path, strerror(errno));
  /* fclose exactly once, even when it fails (the FILE is gone then): the
   * first error is the one reported. */
  int failed = fputs(text, f) < 0;
  int saved = errno;
  if (fclose(f) != 0 && !failed) {
    failed = 1;
    saved = errno;
  }
  if (failed) return vg_err_set(err, "%s: %s", path, strerror(saved));
  return 0;
}

static int write_files(const struct vg_wh_certs_options *o, const char *dir, struct vg_err *err) {
  char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX];
  struct vg_wh_pem pem;
  if (vg_wh_cert_names(o->service, o->namespace_, names, err) != 0 ||
      vg_wh_certs_generate(names, o->days, &pem, err) != 0)
    return -1;
  int rc = write_file(dir, "ca.crt", pem.ca_cert, err);
  if (rc == 0) rc = write_file(dir, "tls.crt", pem.cert, err);
  if (rc == 0) rc = write_file(dir, "tls.key", pem.key, err);
  vg_wh_pem_free(&pem);
  return rc;
}

static int against_api(const struct vg_wh_certs_options *o, const char *kubeconfig,
                       const char *key_secret, bool tls, struct vg_err *err) {
  struct vg_k8s_config cfg = {0};
  if (vg_k8s_config_load(&cfg, kubeconfig, err) != 0) return -1;
  struct vg_k8s_client *c = vg_k8s_client_new(&cfg, err);
  vg_k8s_config_free(&cfg);
  if (c == NULL) return -1;
  /* The key first: the extender's and the agents' pods wait for its volume. */
  int rc = key_secret != NULL ? vg_wh_assign_key_ensure(c, o->namespace_, key_secret, err) : 0;
  if (rc == 0 && tls) rc = vg_wh_certs_run(c, o, err);
  vg_k8s_client_free(c);
  return rc;
}

int vg_wh_certs_main(int argc, char **argv) {
  static const struct option opts[] = {{"namespace", required_argument, NULL, 'n'},
                                       {"service", required_argument, NULL, 's'},
                                       {"secret", required_argument, NULL, 'S'},
                                       {"webhook-config", required_argument, NULL, 'w'},
                                       {"days", required_argument, NULL, 'd'},
                                       {"kubeconfig", required_argument, NULL, 'k'},
                                       {"out-dir", required_argument, NULL, 'o'},
                                       {"validating-config", required_argument, NULL, 'v'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"assignment-key-secret", required_argument, NULL, 'K'},
                                       {"assignment-key-only", no_argument, NULL, 'A'},
                                       {"version", no_argument, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
  struct vg_wh_certs_options o = {.namespace_ = "vgpu-system",
                                  .service = "vgpu-webhook",
                                  .secret = "vgpu-webhook-tls",
                                  .webhook_config = "vgpu-webhook",
                                  .days = 3650,
                                  .min_days = 30};
  const char *kubeconfig = NULL, *out_dir = NULL, *key_secret = NULL;
  bool key_only = false;
  vg_log_set_default(VG_LOG_INFO);
  for (int c; (c = vg_getopt_long(argc, argv, "", opts, "vgpu-webhook certs")) != -1;) {
    if (c == 'n')
      o.namespace_ = optarg;
    else if (c == 's')
      o.service = optarg;
    else if (c == 'S')
      o.secret = optarg;
    else if (c == 'w')
      o.webhook_config = optarg;
    else if (c == 'v')
      o.validating_config = optarg;
    else if (c == 'k')
      kubeconfig = optarg;
    else if (c == 'o')
      out_dir = optarg;
    else if (c == 'K')
      key_secret = optarg;
    else if (c == 'A')
      key_only = true;
    else if (c == 'h')
      return usage(stdout), 0;
    else if (c == 'V')
      return printf("vgpu-webhook %s\n", VG_VERSION), 0;
    else if (c != 'd' || parse_days(optarg, &o.days) != 0) {
      if (c == 'd') fprintf(stderr, "vgpu-webhook certs: --days \"%s\": not 31 to 36500\n", optarg);
      return 2; /* said why, in one line */
    }
  }
  if (optind != argc) {
    fprintf(stderr,
            "vgpu-webhook certs: unexpected argument \"%s\" (see vgpu-webhook certs --help)\n",
            argv[optind]);
    return 2;
  }
  if (out_dir != NULL && key_secret != NULL) {
    fprintf(stderr,
            "vgpu-webhook certs: --assignment-key-secret makes a Secret through the API; "
            "it does not go with --out-dir\n");
    return 2;
  }
  if (key_only && key_secret == NULL) {
    fprintf(stderr, "vgpu-webhook certs: --assignment-key-only needs --assignment-key-secret\n");
    return 2;
  }
  struct vg_err err = {{0}};
  int rc = out_dir != NULL ? write_files(&o, out_dir, &err)
                           : against_api(&o, kubeconfig, key_secret, !key_only, &err);
  if (rc != 0) {
    fprintf(stderr, "vgpu-webhook certs: %s\n", err.msg);
    return 1;
  }
  return 0;
}

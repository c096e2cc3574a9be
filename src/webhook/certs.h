/*
 * certs.h -- a self-signed CA and the webhook's serving certificate, made
 * and checked with GnuTLS.
 *
 * The API server calls the webhook at https://<service>.<namespace>.svc and
 * checks the certificate against the caBundle of the
 * MutatingWebhookConfiguration, so the serving certificate names the
 * Service in every form a client may use (svc, svc.ns, svc.ns.svc,
 * svc.ns.svc.cluster.local) and the caBundle is the CA made here. Keys are
 * ECDSA P-256, written as PKCS#8 PEM.
 */
#ifndef VG_WH_CERTS_H
#define VG_WH_CERTS_H

#include <stddef.h>

#include "err.h"

#define VG_WH_CERT_NAMES 4
#define VG_WH_NAME_MAX 256

struct vg_wh_pem {
  char *ca_cert, *cert, *key; /* PEM, malloc'd */
};

/* The DNS names of service in namespace ns. -1 if they do not fit. */
int vg_wh_cert_names(const char *service, const char *ns,
                     char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], struct vg_err *err);

/* A new CA and a serving certificate for names, both valid for days days
 * (from an hour ago, for clocks a little behind). */
int vg_wh_certs_generate(char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], unsigned days,
                         struct vg_wh_pem *out, struct vg_err *err);

/* 0 when pem is usable as it is: the certificate is signed by ca_cert, is
 * valid now and for min_days more, covers every name, and key is its key.
 * Otherwise -1 with err saying the first thing wrong. */
int vg_wh_certs_check(const struct vg_wh_pem *pem, char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX],
                      unsigned min_days, struct vg_err *err);

/* 0 when GnuTLS loads cert (PEM, a chain) with key, as libmicrohttpd will;
 * -1 with err starting with what. */
int vg_wh_pair_check(const char *cert, const char *key, const char *what, struct vg_err *err);

void vg_wh_pem_free(struct vg_wh_pem *p);

#endif

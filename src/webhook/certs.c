/* certs.c -- see certs.h. */
#include "certs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#define DAY 86400

int vg_wh_cert_names(const char *service, const char *ns,
                     char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], struct vg_err *err) {
  int n = snprintf(names[3], VG_WH_NAME_MAX, "%s.%s.svc.cluster.local", service, ns);
  if (*service == '\0' || *ns == '\0' || n < 0 || n >= VG_WH_NAME_MAX)
    return vg_err_set(err, "service \"%s\" in namespace \"%s\": not a DNS name", service, ns);
  snprintf(names[0], VG_WH_NAME_MAX, "%s", service);
  snprintf(names[1], VG_WH_NAME_MAX, "%s.%s", service, ns);
  snprintf(names[2], VG_WH_NAME_MAX, "%s.%s.svc", service, ns);
  return 0;
}

static int gerr(struct vg_err *err, const char *what, int rc) {
  return vg_err_set(err, "GnuTLS: %s: %s", what, gnutls_strerror(rc));
}

static char *take(gnutls_datum_t *d) {
  char *s = malloc(d->size + 1);
  if (s != NULL) {
    memcpy(s, d->data, d->size);
    s[d->size] = '\0';
  }
  gnutls_free(d->data);
  return s;
}

/* The parts every certificate here shares: version, serial, validity,
 * subject, key. */
static int basics(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn, unsigned days) {
  unsigned char serial[16];
  int rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
  serial[0] &= 0x7f; /* a positive INTEGER */
  time_t now = time(NULL);
  if (rc >= 0) rc = gnutls_x509_crt_set_version(crt, 3);
  if (rc >= 0) rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
  if (rc >= 0) rc = gnutls_x509_crt_set_activation_time(crt, now - 3600);
  if (rc >= 0) rc = gnutls_x509_crt_set_expiration_time(crt, now + (time_t)days * DAY);
  if (rc >= 0)
    rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn));
  if (rc >= 0) rc = gnutls_x509_crt_set_key(crt, key);
  return rc;
}

static int new_key(gnutls_x509_privkey_t *key) {
  int rc = gnutls_x509_privkey_init(key);
  if (rc >= 0)
    rc = gnutls_x509_privkey_generate(*key, GNUTLS_PK_ECDSA,
                                      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
  return rc;
}

static int make_ca(gnutls_x509_crt_t ca, gnutls_x509_privkey_t key, const char *cn, unsigned days) {
  int rc = basics(ca, key, cn, days);
  if (rc >= 0) rc = gnutls_x509_crt_set_basic_constraints(ca, 1, 0);
  if (rc >= 0)
    rc = gnutls_x509_crt_set_key_usage(ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
  if (rc >= 0) rc = gnutls_x509_crt_sign2(ca, ca, key, GNUTLS_DIG_SHA256, 0);
  return rc;
}

static int make_serving(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, gnutls_x509_crt_t ca,
                        gnutls_x509_privkey_t ca_key, char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX],
                        unsigned days) {
  int rc = basics(crt, key, names[2], days);
  if (rc >= 0) rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
  if (rc >= 0) rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
  if (rc >= 0) rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
  for (int i = 0; rc >= 0 && i < VG_WH_CERT_NAMES; i++)
    rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, names[i],
                                              (unsigned)strlen(names[i]), GNUTLS_FSAN_APPEND);
  if (rc >= 0) rc = gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0);
  return rc;
}

static int export_all(gnutls_x509_crt_t ca, gnutls_x509_crt_t crt, gnutls_x509_privkey_t key,
                      struct vg_wh_pem *out) {
  gnutls_datum_t d[3] = {{0}};
  int rc = gnutls_x509_crt_export2(ca, GNUTLS_X509_FMT_PEM, &d[0]);
  if (rc >= 0) rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d[1]);
  if (rc >= 0)
    rc =
        gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d[2]);
  if (rc < 0) {
    for (int i = 0; i < 3; i++) gnutls_free(d[i].data);
    return rc;
  }
  out->ca_cert = take(&d[0]);
  out->cert = take(&d[1]);
  out->key = take(&d[2]);
  return out->ca_cert && out->cert && out->key ? 0 : GNUTLS_E_MEMORY_ERROR;
}

int vg_wh_certs_generate(char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], unsigned days,
                         struct vg_wh_pem *out, struct vg_err *err) {
  memset(out, 0, sizeof(*out));
  gnutls_x509_privkey_t ca_key = NULL, key = NULL;
  gnutls_x509_crt_t ca = NULL, crt = NULL;
  const char *step = "generating keys";
  int rc = new_key(&ca_key);
  if (rc >= 0) rc = new_key(&key);
  if (rc >= 0) rc = gnutls_x509_crt_init(&ca);
  if (rc >= 0) rc = gnutls_x509_crt_init(&crt);
  if (rc >= 0) {
    step = "making the CA";
    rc = make_ca(ca, ca_key, "vgpu-webhook-ca", days);
  }
  if (rc >= 0) {
    step = "making the serving certificate";
    rc = make_serving(crt, key, ca, ca_key, names, days);
  }
  if (rc >= 0) {
    step = "exporting PEM";
    rc = export_all(ca, crt, key, out);
  }
  if (crt) gnutls_x509_crt_deinit(crt);
  if (ca) gnutls_x509_crt_deinit(ca);
  if (key) gnutls_x509_privkey_deinit(key);
  if (ca_key) gnutls_x509_privkey_deinit(ca_key);
  if (rc < 0) {
    vg_wh_pem_free(out);
    return gerr(err, step, rc);
  }
  return 0;
}

static int import(gnutls_x509_crt_t *crt, const char *pem) {
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
  int rc = gnutls_x509_crt_init(crt);
  return rc >= 0 ? gnutls_x509_crt_import(*crt, &d, GNUTLS_X509_FMT_PEM) : rc;
}

/* Signature, validity, names; the key pair is checked by the caller. */
static int check_crt(gnutls_x509_crt_t crt, gnutls_x509_crt_t ca,
                     char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX], unsigned min_days,
                     struct vg_err *err) {
  unsigned status = 0;
  int rc = gnutls_x509_crt_verify(crt, &ca, 1, 0, &status);
  if (rc < 0 || status != 0)
    return vg_err_set(err, "the certificate is not signed by ca.crt%s",
                      status & GNUTLS_CERT_EXPIRED ? " (or one of them expired)" : "");
  time_t now = time(NULL);
  if (gnutls_x509_crt_get_activation_time(crt) > now)
    return vg_err_set(err, "the certificate is not valid yet");
  if (gnutls_x509_crt_get_expiration_time(crt) < now + (time_t)min_days * DAY ||
      gnutls_x509_crt_get_expiration_time(ca) < now + (time_t)min_days * DAY)
    return vg_err_set(err, "the certificate or its CA expires within %u days", min_days);
  for (int i = 0; i < VG_WH_CERT_NAMES; i++)
    if (!gnutls_x509_crt_check_hostname(crt, names[i]))
      return vg_err_set(err, "the certificate does not name %s", names[i]);
  return 0;
}

int vg_wh_pair_check(const char *cert, const char *key, const char *what, struct vg_err *err) {
  gnutls_certificate_credentials_t cred;
  if (gnutls_certificate_allocate_credentials(&cred) < 0)
    return vg_err_set(err, "GnuTLS: out of memory");
  gnutls_datum_t c = {(unsigned char *)cert, (unsigned)strlen(cert)};
  gnutls_datum_t k = {(unsigned char *)key, (unsigned)strlen(key)};
  int rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
  gnutls_certificate_free_credentials(cred);
  return rc < 0 ? gerr(err, what, rc) : 0;
}

int vg_wh_certs_check(const struct vg_wh_pem *pem, char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX],
                      unsigned min_days, struct vg_err *err) {
  if (!pem->ca_cert || !pem->cert || !pem->key)
    return vg_err_set(err, "ca.crt, tls.crt and tls.key are not all there");
  gnutls_x509_crt_t crt = NULL, ca = NULL;
  int rc = import(&ca, pem->ca_cert);
  if (rc < 0) {
    gerr(err, "ca.crt", rc);
  } else if ((rc = import(&crt, pem->cert)) < 0) {
    gerr(err, "tls.crt", rc);
  } else {
    rc = check_crt(crt, ca, names, min_days, err);
    if (rc == 0) rc = vg_wh_pair_check(pem->cert, pem->key, "tls.key with tls.crt", err);
  }
  if (crt) gnutls_x509_crt_deinit(crt);
  if (ca) gnutls_x509_crt_deinit(ca);
  return rc < 0 ? -1 : 0;
}

void vg_wh_pem_free(struct vg_wh_pem *p) {
  if (p->key != NULL) memset(p->key, 0, strlen(p->key));
  free(p->ca_cert);
  free(p->cert);
  free(p->key);
  p->ca_cert = p->cert = p->key = NULL;
}

/* test_webhook_server.c -- vgpu-webhook over real HTTPS: the server on
 * 127.0.0.1 with a CA and serving certificate from its own certs code,
 * libcurl as the API server would call it (the Service's DNS name resolved
 * to 127.0.0.1, the CA as the caBundle); certificate rotation; and the
 * certs job's parts that need no API server: the certificate as GnuTLS
 * parses it, and the Secret and caBundle patch bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "assign_key_secret.h"
#include "base64.h"
#include "certs_api.h"
#include "json_get.h"
#include "review_fixture.h"
#include "server.h"

#define HOST "vgpu-webhook.vgpu-system.svc"

struct fx {
  char dir[64], cert[96], key[96], ca[96], other_ca[96];
  struct vg_wh_resources res;
  struct vg_wh_writers writers;
  struct vg_wh_server *s;
};

static char names[VG_WH_CERT_NAMES][VG_WH_NAME_MAX];

static void write_text(const char *path, const char *text) {
  char tmp[128];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, path), 0); /* as a Secret volume swaps: atomically */
}

/* A new pair into the fixture's files; the CA to ca_path. */
static void new_pair(struct fx *f, const char *ca_path) {
  struct vg_wh_pem pem;
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_certs_generate(names, 30, &pem, &err), 0);
  write_text(f->cert, pem.cert);
  write_text(f->key, pem.key);
  write_text(ca_path, pem.ca_cert);
  vg_wh_pem_free(&pem);
}

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof(*f));
  strcpy(f->dir, "/tmp/vgpu-webhook-test-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  snprintf(f->cert, sizeof(f->cert), "%s/tls.crt", f->dir);
  snprintf(f->key, sizeof(f->key), "%s/tls.key", f->dir);
  snprintf(f->ca, sizeof(f->ca), "%s/ca.crt", f->dir);
  snprintf(f->other_ca, sizeof(f->other_ca), "%s/other-ca.crt", f->dir);
  assert_int_equal(vg_wh_cert_names("vgpu-webhook", "vgpu-system", names, NULL), 0);
  new_pair(f, f->ca);
  vg_wh_resources_default(&f->res, NULL);
  vg_wh_writers_default(&f->writers);
  struct vg_wh_server_options o = {"127.0.0.1:0", f->cert, f->key, &f->res, &f->writers};
  struct vg_err err = {{0}};
  f->s = vg_wh_server_start(&o, &err);
  if (f->s == NULL) fail_msg("%s", err.msg);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  vg_wh_server_stop(f->s);
  const char *files[] = {f->cert, f->key, f->ca, f->other_ca};
  for (int i = 0; i < 4; i++) unlink(files[i]);
  rmdir(f->dir);
  free(f);
  return 0;
}

struct buf {
  char *data;
  size_t len;
};

static size_t collect(char *p, size_t size, size_t n, void *arg) {
  struct buf *b = arg;
  b->data = realloc(b->data, b->len + size * n + 1);
  memcpy(b->data + b->len, p, size * n);
  b->len += size * n;
  b->data[b->len] = '\0';
  return size * n;
}

/* One request to https://HOST:port<path> trusting ca; the curl result, the
 * HTTP status and body (malloc'd, or NULL). */
static CURLcode call(struct fx *f, const char *ca, const char *path, const char *body,
                     size_t body_len, long *status, char **out) {
  char url[128], resolve[128];
  int port = vg_wh_server_port(f->s);
  snprintf(url, sizeof(url), "https://%s:%d%s", HOST, port, path);
  snprintf(resolve, sizeof(resolve), "%s:%d:127.0.0.1", HOST, port);
  struct curl_slist *rs = curl_slist_append(NULL, resolve);
  struct curl_slist *hs = curl_slist_append(NULL, "Content-Type: application/json");
  struct buf b = {0};
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_RESOLVE, rs);
  curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
  if (body != NULL) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
  }
  CURLcode rc = curl_easy_perform(h);
  *status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup(h);
  curl_slist_free_all(rs);
  curl_slist_free_all(hs);
  *out = b.data;
  return rc;
}

static void expect(struct fx *f, const char *path, const char *body, size_t len, long want,
                   const char *part) {
  long status;
  char *out = NULL;
  CURLcode rc = call(f, f->ca, path, body, len, &status, &out);
  if (rc != CURLE_OK) fail_msg("%s: %s", path, curl_easy_strerror(rc));
  assert_int_equal(status, want);
  if (out == NULL || strstr(out, part) == NULL)
    fail_msg("%s: \"%s\" lacks \"%s\"", path, out, part);
  free(out);
}

static void test_https_endpoints(void **state) {
  struct fx *f = *state;
  expect(f, "/healthz", NULL, 0, 200, "ok");
  char *review = fx_review(
      "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":"
      "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
  expect(f, "/mutate", review, strlen(review), 200, "\"patchType\":\"JSONPatch\"");
  expect(f, "/mutate", review, strlen(review), 200, "\"uid\":\"u-1\"");
  free(review);
  expect(f, "/mutate", "{nope", 5, 400, "not JSON");
  size_t big = VG_WH_MAX_BODY + 4096;
  char *huge = malloc(big);
  memset(huge, ' ', big);
  expect(f, "/mutate", huge, big, 413, "limit");
  free(huge);
  expect(f, "/metrics", NULL, 0, 200, "vgpu_webhook_reviews_total{result=\"mutated\"} 2\n");
}

/* A client that trusts another CA refuses the server (what the API server
 * does with a stale caBundle). */
static void test_wrong_ca_refused(void **state) {
  struct fx *f = *state;
  struct vg_wh_pem other;
  assert_int_equal(vg_wh_certs_generate(names, 30, &other, NULL), 0);
  write_text(f->other_ca, other.ca_cert);
  vg_wh_pem_free(&other);
  long status;
  char *out = NULL;
  CURLcode rc = call(f, f->other_ca, "/healthz", NULL, 0, &status, &out);
  free(out);
  assert_int_not_equal(rc, CURLE_OK);
}

/* New files are served after a reload on the same port; unchanged files do
 * nothing; a key that does not match keeps the previous pair serving. */
static void test_rotation(void **state) {
  struct fx *f = *state;
  struct vg_err err = {{0}};
  int port = vg_wh_server_port(f->s);
  assert_int_equal(vg_wh_server_reload(f->s, &err), 0);
  sleep(1); /* a new mtime even on coarse file systems */
  new_pair(f, f->other_ca);
  assert_int_equal(vg_wh_server_reload(f->s, &err), 1);
  assert_int_equal(vg_wh_server_port(f->s), port);
  long status;
  char *out = NULL;
  assert_int_equal(call(f, f->other_ca, "/healthz", NULL, 0, &status, &out), CURLE_OK);
  free(out);
  assert_int_not_equal(call(f, f->ca, "/healthz", NULL, 0, &status, &out), CURLE_OK);
  free(out);
  char old[96]; /* from here on the fixture trusts the new CA */
  memcpy(old, f->ca, sizeof(old));
  memcpy(f->ca, f->other_ca, sizeof(old));
  memcpy(f->other_ca, old, sizeof(old));
  /* a key of another pair */
  struct vg_wh_pem other;
  assert_int_equal(vg_wh_certs_generate(names, 30, &other, NULL), 0);
  write_text(f->key, other.key);
  vg_wh_pem_free(&other);
  assert_int_equal(vg_wh_server_reload(f->s, &err), -1);
  assert_non_null(strstr(err.msg, "--tls-cert"));
  expect(f, "/healthz", NULL, 0, 200, "ok");
  expect(f, "/metrics", NULL, 0, 200, "vgpu_webhook_tls_reload_failures_total 1\n");
}

/* The certificate as GnuTLS reads it: a CA, and a serving certificate with
 * exactly the four Service names, for the days asked. */
static void test_certificate_contents(void **state) {
  (void)state;
  struct vg_wh_pem pem;
  assert_int_equal(vg_wh_certs_generate(names, 400, &pem, NULL), 0);
  gnutls_x509_crt_t ca, crt;
  gnutls_datum_t d = {(unsigned char *)pem.ca_cert, (unsigned)strlen(pem.ca_cert)};
  assert_int_equal(gnutls_x509_crt_init(&ca), 0);
  assert_int_equal(gnutls_x509_crt_import(ca, &d, GNUTLS_X509_FMT_PEM), 0);
  d = (gnutls_datum_t){(unsigned char *)pem.cert, (unsigned)strlen(pem.cert)};
  assert_int_equal(gnutls_x509_crt_init(&crt), 0);
  assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
  unsigned crit = 0;
  assert_int_equal(gnutls_x509_crt_get_ca_status(ca, &crit), 1);
  assert_int_equal(gnutls_x509_crt_get_ca_status(crt, &crit), 0);
  const char *want[] = {"vgpu-webhook", "vgpu-webhook.vgpu-system", "vgpu-webhook.vgpu-system.svc",
                        "vgpu-webhook.vgpu-system.svc.cluster.local"};
  unsigned i = 0;
  for (;; i++) {
    char san[256];
    size_t len = sizeof(san);
    int type = gnutls_x509_crt_get_subject_alt_name(crt, i, san, &len, NULL);
    if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) break;
    assert_int_equal(type, GNUTLS_SAN_DNSNAME);
    assert_true(i < 4);
    assert_string_equal(san, want[i]);
  }
  assert_int_equal(i, 4);
  time_t left = gnutls_x509_crt_get_expiration_time(crt) - time(NULL);
  assert_true(left > 399 * 86400 && left <= 400 * 86400);
  assert_true(gnutls_x509_crt_get_activation_time(crt) <= time(NULL));
  unsigned status = 1;
  assert_int_equal(gnutls_x509_crt_verify(crt, &ca, 1, 0, &status), 0);
  assert_int_equal(status, 0);
  gnutls_x509_crt_deinit(ca);
  gnutls_x509_crt_deinit(crt);
  /* the job's keep-or-replace check */
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_certs_check(&pem, names, 30, &err), 0);
  assert_int_equal(vg_wh_certs_check(&pem, names, 401, &err), -1);
  assert_non_null(strstr(err.msg, "expires within"));
  char others[VG_WH_CERT_NAMES][VG_WH_NAME_MAX];
  assert_int_equal(vg_wh_cert_names("vgpu-webhook", "other", others, NULL), 0);
  assert_int_equal(vg_wh_certs_check(&pem, others, 30, &err), -1);
  assert_non_null(strstr(err.msg, "does not name vgpu-webhook.other"));
  struct vg_wh_pem second;
  assert_int_equal(vg_wh_certs_generate(names, 400, &second, NULL), 0);
  struct vg_wh_pem mixed = {pem.ca_cert, second.cert, second.key};
  assert_int_equal(vg_wh_certs_check(&mixed, names, 30, &err), -1);
  assert_non_null(strstr(err.msg, "not signed by ca.crt"));
  mixed = (struct vg_wh_pem){pem.ca_cert, pem.cert, second.key};
  assert_int_equal(vg_wh_certs_check(&mixed, names, 30, &err), -1);
  assert_non_null(strstr(err.msg, "tls.key"));
  vg_wh_pem_free(&second);
  vg_wh_pem_free(&pem);
}

/* The Secret the job writes, read back as the job reads it. */
static void test_secret_body(void **state) {
  (void)state;
  struct vg_wh_pem pem, back;
  assert_int_equal(vg_wh_certs_generate(names, 40, &pem, NULL), 0);
  char *text = vg_wh_secret_json("vgpu-system", "vgpu-webhook-tls", &pem, "42");
  json_object *s = json_tokener_parse(text);
  free(text);
  assert_string_equal(vg_json_get_str(s, "kind"), "Secret");
  assert_string_equal(vg_json_get_str(s, "type"), "kubernetes.io/tls");
  json_object *meta = vg_json_get(s, "metadata");
  assert_string_equal(vg_json_get_str(meta, "name"), "vgpu-webhook-tls");
  assert_string_equal(vg_json_get_str(meta, "namespace"), "vgpu-system");
  assert_string_equal(vg_json_get_str(meta, "resourceVersion"), "42");
  assert_int_equal(json_object_object_length(vg_json_get(s, "data")), 3);
  assert_int_equal(vg_wh_secret_pem(s, &back, NULL), 0);
  assert_string_equal(back.cert, pem.cert);
  assert_string_equal(back.key, pem.key);
  assert_string_equal(back.ca_cert, pem.ca_cert);
  vg_wh_pem_free(&back);
  json_object_object_del(vg_json_get(s, "data"), "ca.crt");
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_secret_pem(s, &back, &err), -1);
  assert_non_null(strstr(err.msg, "data.ca.crt"));
  json_object_put(s);
  text = vg_wh_secret_json("ns", "n", &pem, NULL);
  assert_null(strstr(text, "resourceVersion"));
  free(text);
  vg_wh_pem_free(&pem);
}

/* The assignment key's Secret as the Job writes it: Opaque, data.key the
 * key's bytes in base64, read back as usable; a short or missing key is
 * named (the Job then stops rather than replace it). */
static void test_assignment_key_secret(void **state) {
  (void)state;
  unsigned char key[32];
  for (int i = 0; i < 32; i++) key[i] = (unsigned char)(255 - i);
  char *text = vg_wh_assign_key_secret_json("vgpu-system", "vgpu-assignment-key", key, 32);
  json_object *s = json_tokener_parse(text);
  free(text);
  assert_string_equal(vg_json_get_str(s, "type"), "Opaque");
  assert_string_equal(vg_json_get_str(vg_json_get(s, "metadata"), "name"), "vgpu-assignment-key");
  size_t len = 0;
  char *back = vg_base64_decode(vg_json_get_str(vg_json_get(s, "data"), "key"), &len);
  assert_int_equal(len, 32);
  assert_memory_equal(back, key, 32);
  free(back);
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_assign_key_check(s, &err), 0);
  json_object_put(s);
  text = vg_wh_assign_key_secret_json("ns", "k", key, 31);
  s = json_tokener_parse(text);
  free(text);
  assert_int_equal(vg_wh_assign_key_check(s, &err), -1);
  assert_string_equal(err.msg, "data.key holds 31 bytes, not at least 32");
  json_object_object_del(vg_json_get(s, "data"), "key");
  assert_int_equal(vg_wh_assign_key_check(s, &err), -1);
  assert_string_equal(err.msg, "data.key is missing or not base64");
  json_object_put(s);
}

/* The caBundle patch: each webhook, guarded by its name; nothing when all
 * already hold the CA; refused when there is no webhook. */
static void test_cabundle_patch(void **state) {
  (void)state;
  const char *ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  char *b64 = vg_base64_encode(ca, strlen(ca)), *patch = NULL, cfg_text[1024];
  snprintf(cfg_text, sizeof(cfg_text),
           "{\"webhooks\":[{\"name\":\"pods.vgpu.io\",\"clientConfig\":{}},"
           "{\"name\":\"b.vgpu.io\",\"clientConfig\":{\"caBundle\":\"%s\"}}]}",
           b64);
  json_object *cfg = json_tokener_parse(cfg_text);
  assert_int_equal(vg_wh_cabundle_patch(cfg, ca, &patch, NULL), 0);
  char want[2048];
  snprintf(want, sizeof(want),
           "[{\"op\":\"test\",\"path\":\"/webhooks/0/name\",\"value\":\"pods.vgpu.io\"},"
           "{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"%s\"},"
           "{\"op\":\"test\",\"path\":\"/webhooks/1/name\",\"value\":\"b.vgpu.io\"},"
           "{\"op\":\"add\",\"path\":\"/webhooks/1/clientConfig/caBundle\",\"value\":\"%s\"}]",
           b64, b64);
  assert_string_equal(patch, want);
  free(patch);
  json_object_object_add(
      vg_json_get(json_object_array_get_idx(vg_json_get(cfg, "webhooks"), 0), "clientConfig"),
      "caBundle", json_object_new_string(b64));
  assert_int_equal(vg_wh_cabundle_patch(cfg, ca, &patch, NULL), 1);
  json_object_put(cfg);
  cfg = json_tokener_parse("{\"webhooks\":[]}");
  struct vg_err err = {{0}};
  assert_int_equal(vg_wh_cabundle_patch(cfg, ca, &patch, &err), -1);
  assert_non_null(strstr(err.msg, "no webhooks"));
  json_object_put(cfg);
  free(b64);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_https_endpoints, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_ca_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
      cmocka_unit_test(test_certificate_contents),
      cmocka_unit_test(test_secret_body),
      cmocka_unit_test(test_assignment_key_secret),
      cmocka_unit_test(test_cabundle_patch),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  curl_global_cleanup();
  return rc;
}

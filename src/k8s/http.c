/* http.c -- the client, authentication and one request; see k8s.h. */
#include "k8s_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf.h"

#define TOKEN_REFRESH_S 60

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

struct vg_k8s_client *vg_k8s_client_new(const struct vg_k8s_config *cfg, struct vg_err *err) {
  pthread_once(&curl_once, curl_init_once);
  if (cfg == NULL || cfg->server == NULL) {
    vg_err_set(err, "kubernetes client: no API server configured");
    return NULL;
  }
  struct vg_k8s_client *c = calloc(1, sizeof(*c));
  if (c == NULL || vg_k8s_config_copy(&c->cfg, cfg) != 0) {
    if (c != NULL) vg_k8s_config_free(&c->cfg);
    free(c);
    vg_err_set(err, "kubernetes client: out of memory");
    return NULL;
  }
  c->request_ms = 30000;
  c->connect_ms = 10000;
  pthread_mutex_init(&c->lock, NULL);
  if (cfg->token != NULL) c->token = strdup(cfg->token);
  return c;
}

void vg_k8s_client_free(struct vg_k8s_client *c) {
  if (c == NULL) return;
  vg_k8s_config_free(&c->cfg);
  pthread_mutex_destroy(&c->lock);
  free(c->token);
  free(c);
}

void vg_k8s_client_set_timeouts(struct vg_k8s_client *c, long request_ms, long connect_ms) {
  c->request_ms = request_ms;
  c->connect_ms = connect_ms;
}

/* "Authorization: Bearer ..." into hdr, re-reading the token file when the
 * cached token is older than a minute (bound service-account tokens rotate). */
static int auth_header(struct vg_k8s_client *c, char *hdr, size_t len, struct vg_err *err) {
  hdr[0] = '\0';
  pthread_mutex_lock(&c->lock);
  time_t now = time(NULL);
  if (c->cfg.token_file != NULL &&
      (c->token == NULL || now - c->token_read >= TOKEN_REFRESH_S || now < c->token_read)) {
    char *tok = NULL;
    struct vg_err rerr;
    if (vg_k8s_read_file(c->cfg.token_file, &tok, NULL, &rerr) == 0) {
      size_t n = strlen(tok);
      while (n > 0 && isspace((unsigned char)tok[n - 1])) tok[--n] = '\0';
      free(c->token);
      c->token = tok;
      c->token_read = now;
    } else if (c->token == NULL) {
      pthread_mutex_unlock(&c->lock);
      return vg_err_set(err, "bearer token: %s", rerr.msg);
    } /* else keep the old token; the file may be mid-rotation */
  }
  if (c->token != NULL && c->token[0] != '\0')
    snprintf(hdr, len, "Authorization: Bearer %s", c->token);
  pthread_mutex_unlock(&c->lock);
  return 0;
}

CURL *vg_k8s_easy(struct vg_k8s_client *c, const char *method, const char *url,
                  const char *content_type, struct curl_slist **headers, struct vg_err *err) {
  *headers = NULL;
  char auth[8192];
  if (auth_header(c, auth, sizeof(auth), err) != 0) return NULL;
  CURL *h = curl_easy_init();
  if (h == NULL) {
    vg_err_set(err, "%s %s: curl_easy_init failed", method, url);
    return NULL;
  }
  struct curl_slist *hl = curl_slist_append(NULL, "Accept: application/json");
  if (auth[0] != '\0') hl = curl_slist_append(hl, auth);
  if (content_type != NULL) {
    char ct[256];
    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
    hl = curl_slist_append(hl, ct);
  }
  hl = curl_slist_append(hl, "User-Agent: vgpu/k8s-client");
  *headers = hl;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (c->cfg.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (c->cfg.ca_data != NULL) {
    struct curl_blob b = {c->cfg.ca_data, c->cfg.ca_data_len, CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
  } else if (c->cfg.ca_file != NULL) {
    curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg.ca_file);
  }
  if (c->cfg.cert_data != NULL) {
    struct curl_blob b = {c->cfg.cert_data, c->cfg.cert_data_len, CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (c->cfg.cert_file != NULL) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, c->cfg.cert_file);
  }
  if (c->cfg.key_data != NULL) {
    struct curl_blob b = {c->cfg.key_data, c->cfg.key_data_len, CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (c->cfg.key_file != NULL) {
    curl_easy_setopt(h, CURLOPT_SSLKEY, c->cfg.key_file);
  }
  return h;
}

int vg_k8s_curl_error(const char *method, const char *url, CURLcode rc, const char *errbuf,
                      struct vg_err *err) {
  const char *detail = errbuf != NULL && errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      vg_err_set(err, "%s %s: API server unreachable: %s", method, url, detail);
      return VG_K8S_EUNREACHABLE;
    default:
      vg_err_set(err, "%s %s: %s", method, url, detail);
      return VG_K8S_EFAIL;
  }
}

int vg_k8s_status_error(const char *method, const char *url, long status, const char *body,
                        struct vg_err *err) {
  char msg[300] = "";
  json_object *st = body != NULL ? json_tokener_parse(body) : NULL;
  json_object *m;
  if (st != NULL && json_object_object_get_ex(st, "message", &m) &&
      json_object_is_type(m, json_type_string))
    snprintf(msg, sizeof(msg), ": %s", json_object_get_string(m));
  else if (body != NULL && body[0] != '\0')
    snprintf(msg, sizeof(msg), ": %.200s", body);
  if (st != NULL) json_object_put(st);
  vg_err_set(err, "%s %s: HTTP %ld%s", method, url, status, msg);
  switch (status) {
    case 400:
      return VG_K8S_EBADREQUEST;
    case 401:
    case 403:
      return VG_K8S_EUNAUTHORIZED;
    case 404:
      return VG_K8S_ENOTFOUND;
    case 409:
      return VG_K8S_ECONFLICT;
    case 410:
      return VG_K8S_EEXPIRED;
    default:
      return VG_K8S_EFAIL;
  }
}

static size_t collect(char *data, size_t size, size_t n, void *arg) {
  struct vg_textbuf *b = arg;
  size_t add = size * n;
  return vg_textbuf_add(b, data, add) ? add : 0;
}

int vg_k8s_request(struct vg_k8s_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, struct vg_k8s_response *resp,
                   struct vg_err *err) {
  memset(resp, 0, sizeof(*resp));
  char url[4096];
  snprintf(url, sizeof(url), "%s%s", c->cfg.server, path);
  struct curl_slist *hl;
  CURL *h = vg_k8s_easy(c, method, url, content_type, &hl, err);
  if (h == NULL) return VG_K8S_EFAIL;
  struct vg_textbuf b = {0};
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->request_ms);
  if (body != NULL) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  CURLcode rc = curl_easy_perform(h);
  int ret = 0;
  if (rc != CURLE_OK) {
    ret = b.oom ? vg_err_set(err, "%s %s: out of memory reading the response", method, url)
                : vg_k8s_curl_error(method, url, rc, errbuf, err);
    vg_textbuf_free(&b);
  } else {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    resp->len = b.len;
    resp->body = b.data != NULL ? vg_textbuf_take(&b, NULL) : strdup("");
  }
  curl_easy_cleanup(h);
  curl_slist_free_all(hl);
  return ret;
}

void vg_k8s_response_free(struct vg_k8s_response *resp) {
  free(resp->body);
  memset(resp, 0, sizeof(*resp));
}

int vg_k8s_call(struct vg_k8s_client *c, const char *method, const char *path,
                const char *content_type, const char *body, json_object **out, struct vg_err *err) {
  if (out != NULL) *out = NULL;
  struct vg_k8s_response r;
  int rc = vg_k8s_request(c, method, path, content_type, body, &r, err);
  if (rc != 0) return rc;
  char url[4096];
  snprintf(url, sizeof(url), "%s%s", c->cfg.server, path);
  if (r.status < 200 || r.status > 299) {
    rc = vg_k8s_status_error(method, url, r.status, r.body, err);
  } else if (out != NULL) {
    *out = json_tokener_parse(r.body);
    if (*out == NULL)
      rc = vg_err_set(err, "%s %s: HTTP %ld but the body is not JSON: %.100s", method, url,
                      r.status, r.body);
  }
  vg_k8s_response_free(&r);
  return rc;
}

const char *vg_k8s_escape(const char *s, char *buf, size_t len) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (; *s != '\0' && o + 4 < len; s++) {
    unsigned char ch = (unsigned char)*s;
    if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      buf[o++] = (char)ch;
    } else {
      buf[o++] = '%';
      buf[o++] = hex[ch >> 4];
      buf[o++] = hex[ch & 15];
    }
  }
  buf[o] = '\0';
  return buf;
}

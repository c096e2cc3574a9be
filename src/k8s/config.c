/* config.c -- in-cluster and kubeconfig configuration; see k8s.h. */
#include "k8s.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "base64.h"
#include "k8s_internal.h"
#include "textbuf.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void vg_k8s_config_free(struct vg_k8s_config *cfg) {
  if (cfg == NULL) return;
  free(cfg->server);
  free(cfg->source);
  free(cfg->ca_file);
  free(cfg->ca_data);
  free(cfg->token);
  free(cfg->token_file);
  free(cfg->cert_file);
  free(cfg->key_file);
  free(cfg->cert_data);
  free(cfg->key_data);
  free(cfg->namespace_);
  memset(cfg, 0, sizeof(*cfg));
}

static char *xstrdup(const char *s) { return s == NULL ? NULL : strdup(s); }

int vg_k8s_read_file(const char *path, char **out, size_t *len, struct vg_err *err) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return vg_err_set(err, "%s: cannot open: %s", path, strerror(errno));
  struct vg_textbuf t = {0};
  char chunk[4096];
  size_t got;
  vg_textbuf_reserve(&t, 0); /* an empty file reads as "" */
  while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if (!vg_textbuf_add(&t, chunk, got)) break;
  int bad = ferror(f);
  fclose(f);
  if (t.oom) {
    vg_textbuf_free(&t);
    return vg_err_set(err, "%s: out of memory", path);
  }
  if (bad) {
    vg_textbuf_free(&t);
    return vg_err_set(err, "%s: read error", path);
  }
  if (len != NULL) *len = t.len;
  *out = vg_textbuf_take(&t, NULL);
  return 0;
}

/* Strips trailing whitespace (token files often end in a newline). */
static void rstrip(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
}

int vg_k8s_config_in_cluster(struct vg_k8s_config *cfg, const char *sa_dir, struct vg_err *err) {
  memset(cfg, 0, sizeof(*cfg));
  if (sa_dir == NULL) sa_dir = SA_DIR;
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == NULL || *host == '\0' || port == NULL || *port == '\0')
    return vg_err_set(err,
                      "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                      "must be set (not running in a pod? pass --kubeconfig)");
  char buf[1024];
  bool v6 = strchr(host, ':') != NULL;
  snprintf(buf, sizeof(buf), "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
  cfg->server = strdup(buf);
  cfg->source = strdup("in-cluster");

  snprintf(buf, sizeof(buf), "%s/token", sa_dir);
  char *token = NULL;
  if (vg_k8s_read_file(buf, &token, NULL, err) != 0) {
    vg_k8s_config_free(cfg);
    return vg_err_set(err, "in-cluster config: service-account token %s unreadable", buf);
  }
  free(token);
  cfg->token_file = strdup(buf);

  snprintf(buf, sizeof(buf), "%s/ca.crt", sa_dir);
  FILE *f = fopen(buf, "r");
  if (f == NULL) {
    int e = errno;
    vg_k8s_config_free(cfg);
    return vg_err_set(err, "in-cluster config: CA file %s: %s", buf, strerror(e));
  }
  fclose(f);
  cfg->ca_file = strdup(buf);

  snprintf(buf, sizeof(buf), "%s/namespace", sa_dir);
  char *ns = NULL;
  if (vg_k8s_read_file(buf, &ns, NULL, NULL) == 0) {
    rstrip(ns);
    cfg->namespace_ = ns;
  }
  return 0;
}

/* ---- kubeconfig ---- */

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key) {
  if (map == NULL || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    if (k != NULL && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
      return yaml_document_get_node(doc, p->value);
  }
  return NULL;
}

static const char *scalar(yaml_node_t *n) {
  if (n == NULL || n->type != YAML_SCALAR_NODE) return NULL;
  return (const char *)n->data.scalar.value;
}

/* Finds the entry named name in a list like clusters: and returns its
 * member `field` (cluster:, user:, context:). */
static yaml_node_t *named_entry(yaml_document_t *doc, yaml_node_t *seq, const char *name,
                                const char *field) {
  if (seq == NULL || seq->type != YAML_SEQUENCE_NODE) return NULL;
  for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
       it++) {
    yaml_node_t *e = yaml_document_get_node(doc, *it);
    const char *n = scalar(map_get(doc, e, "name"));
    if (n != NULL && strcmp(n, name) == 0) return map_get(doc, e, field);
  }
  return NULL;
}

/* Relative paths in a kubeconfig are relative to the file's directory. */
static char *resolve_path(const char *kubeconfig, const char *p) {
  if (p[0] == '/') return strdup(p);
  const char *slash = strrchr(kubeconfig, '/');
  if (slash == NULL) return strdup(p);
  size_t dl = (size_t)(slash - kubeconfig);
  char *out = malloc(dl + strlen(p) + 2);
  if (out == NULL) return NULL;
  memcpy(out, kubeconfig, dl);
  out[dl] = '/';
  strcpy(out + dl + 1, p);
  return out;
}

static int load_b64(const char *path, const char *field, const char *value, char **out, size_t *len,
                    struct vg_err *err) {
  *out = vg_base64_decode(value, len);
  if (*out == NULL) return vg_err_set(err, "%s: %s is not valid base64", path, field);
  return 0;
}

static int parse_kubeconfig(struct vg_k8s_config *cfg, const char *path, yaml_document_t *doc,
                            struct vg_err *err) {
  yaml_node_t *root = yaml_document_get_root_node(doc);
  if (root == NULL || root->type != YAML_MAPPING_NODE)
    return vg_err_set(err, "%s: not a kubeconfig (top level is not a mapping)", path);
  const char *ctx_name = scalar(map_get(doc, root, "current-context"));
  if (ctx_name == NULL || *ctx_name == '\0')
    return vg_err_set(err, "%s: current-context is missing", path);
  yaml_node_t *ctx = named_entry(doc, map_get(doc, root, "contexts"), ctx_name, "context");
  if (ctx == NULL)
    return vg_err_set(err, "%s: contexts has no entry named '%s' (the current-context)", path,
                      ctx_name);
  const char *cluster_name = scalar(map_get(doc, ctx, "cluster"));
  if (cluster_name == NULL)
    return vg_err_set(err, "%s: context '%s' has no cluster field", path, ctx_name);
  const char *user_name = scalar(map_get(doc, ctx, "user"));
  const char *ns = scalar(map_get(doc, ctx, "namespace"));
  if (ns != NULL) cfg->namespace_ = strdup(ns);

  yaml_node_t *cl = named_entry(doc, map_get(doc, root, "clusters"), cluster_name, "cluster");
  if (cl == NULL)
    return vg_err_set(err, "%s: clusters has no entry named '%s' (from context '%s')", path,
                      cluster_name, ctx_name);
  const char *server = scalar(map_get(doc, cl, "server"));
  if (server == NULL || *server == '\0')
    return vg_err_set(err, "%s: cluster '%s' has no server field", path, cluster_name);
  if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
    return vg_err_set(err, "%s: cluster '%s' server '%s' is not an http(s) URL", path, cluster_name,
                      server);
  cfg->server = strdup(server);
  size_t sl = strlen(cfg->server);
  while (sl > 0 && cfg->server[sl - 1] == '/') cfg->server[--sl] = '\0';
  const char *v;
  if ((v = scalar(map_get(doc, cl, "certificate-authority-data"))) != NULL) {
    if (load_b64(path, "certificate-authority-data", v, &cfg->ca_data, &cfg->ca_data_len, err))
      return -1;
  } else if ((v = scalar(map_get(doc, cl, "certificate-authority"))) != NULL) {
    cfg->ca_file = resolve_path(path, v);
  }
  if ((v = scalar(map_get(doc, cl, "insecure-skip-tls-verify"))) != NULL) {
    if (strcmp(v, "true") == 0)
      cfg->insecure = true;
    else if (strcmp(v, "false") != 0)
      return vg_err_set(err, "%s: cluster '%s' insecure-skip-tls-verify '%s' is not true/false",
                        path, cluster_name, v);
  }

  if (user_name == NULL) return 0; /* anonymous */
  yaml_node_t *u = named_entry(doc, map_get(doc, root, "users"), user_name, "user");
  if (u == NULL)
    return vg_err_set(err, "%s: users has no entry named '%s' (from context '%s')", path, user_name,
                      ctx_name);
  if ((v = scalar(map_get(doc, u, "token"))) != NULL) cfg->token = strdup(v);
  if ((v = scalar(map_get(doc, u, "tokenFile"))) != NULL) cfg->token_file = resolve_path(path, v);
  if ((v = scalar(map_get(doc, u, "client-certificate-data"))) != NULL) {
    if (load_b64(path, "client-certificate-data", v, &cfg->cert_data, &cfg->cert_data_len, err))
      return -1;
  } else if ((v = scalar(map_get(doc, u, "client-certificate"))) != NULL) {
    cfg->cert_file = resolve_path(path, v);
  }
  if ((v = scalar(map_get(doc, u, "client-key-data"))) != NULL) {
    if (load_b64(path, "client-key-data", v, &cfg->key_data, &cfg->key_data_len, err)) return -1;
  } else if ((v = scalar(map_get(doc, u, "client-key"))) != NULL) {
    cfg->key_file = resolve_path(path, v);
  }
  bool has_cert = cfg->cert_data != NULL || cfg->cert_file != NULL;
  bool has_key = cfg->key_data != NULL || cfg->key_file != NULL;
  if (has_cert && !has_key)
    return vg_err_set(err, "%s: user '%s' has a client certificate but no client-key(-data)", path,
                      user_name);
  if (has_key && !has_cert)
    return vg_err_set(err, "%s: user '%s' has a client key but no client-certificate(-data)", path,
                      user_name);
  if (map_get(doc, u, "exec") != NULL && cfg->token == NULL && !has_cert)
    return vg_err_set(err,
                      "%s: user '%s' uses an exec credential plugin, which is not supported; "
                      "use a token or client certificate",
                      path, user_name);
  return 0;
}

int vg_k8s_config_kubeconfig(struct vg_k8s_config *cfg, const char *path, struct vg_err *err) {
  memset(cfg, 0, sizeof(*cfg));
  FILE *f = fopen(path, "rb");
  if (f == NULL) return vg_err_set(err, "kubeconfig %s: cannot open: %s", path, strerror(errno));
  yaml_parser_t parser;
  yaml_document_t doc;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, f);
  int rc;
  if (!yaml_parser_load(&parser, &doc)) {
    rc = vg_err_set(err, "%s: line %zu: YAML error: %s", path, parser.problem_mark.line + 1,
                    parser.problem != NULL ? parser.problem : "unknown");
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
  }
  rc = parse_kubeconfig(cfg, path, &doc, err);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  fclose(f);
  if (rc != 0) {
    vg_k8s_config_free(cfg);
    return -1;
  }
  cfg->source = strdup(path);
  return 0;
}

int vg_k8s_config_load(struct vg_k8s_config *cfg, const char *kubeconfig_path, struct vg_err *err) {
  if (kubeconfig_path != NULL && *kubeconfig_path != '\0')
    return vg_k8s_config_kubeconfig(cfg, kubeconfig_path, err);
  const char *env = getenv("KUBECONFIG");
  if (env != NULL && *env != '\0') {
    char *first = xstrdup(env);
    if (first == NULL) return vg_err_set(err, "out of memory");
    char *colon = strchr(first, ':');
    if (colon != NULL) *colon = '\0';
    int rc = vg_k8s_config_kubeconfig(cfg, first, err);
    free(first);
    return rc;
  }
  return vg_k8s_config_in_cluster(cfg, NULL, err);
}

int vg_k8s_config_copy(struct vg_k8s_config *dst, const struct vg_k8s_config *src) {
  memset(dst, 0, sizeof(*dst));
  dst->server = xstrdup(src->server);
  dst->source = xstrdup(src->source);
  dst->ca_file = xstrdup(src->ca_file);
  dst->token = xstrdup(src->token);
  dst->token_file = xstrdup(src->token_file);
  dst->cert_file = xstrdup(src->cert_file);
  dst->key_file = xstrdup(src->key_file);
  dst->namespace_ = xstrdup(src->namespace_);
  dst->insecure = src->insecure;
  struct {
    char **d;
    size_t *dl;
    const char *s;
    size_t sl;
  } blobs[] = {{&dst->ca_data, &dst->ca_data_len, src->ca_data, src->ca_data_len},
               {&dst->cert_data, &dst->cert_data_len, src->cert_data, src->cert_data_len},
               {&dst->key_data, &dst->key_data_len, src->key_data, src->key_data_len}};
  for (size_t i = 0; i < sizeof(blobs) / sizeof(blobs[0]); i++) {
    if (blobs[i].s == NULL) continue;
    *blobs[i].d = malloc(blobs[i].sl + 1);
    if (*blobs[i].d == NULL) return -1;
    memcpy(*blobs[i].d, blobs[i].s, blobs[i].sl);
    (*blobs[i].d)[blobs[i].sl] = '\0';
    *blobs[i].dl = blobs[i].sl;
  }
  return dst->server == NULL ? -1 : 0;
}

int vg_k8s_config_kubectl(struct vg_k8s_config *cfg, const char *kubeconfig_path,
                          struct vg_err *err) {
  const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
  char path[4096];
  if (kubeconfig_path != NULL) return vg_k8s_config_kubeconfig(cfg, kubeconfig_path, err);
  /* vg_k8s_config_load takes the first file of the list */
  if (env != NULL && *env != '\0') return vg_k8s_config_load(cfg, NULL, err);
  snprintf(path, sizeof(path), "%s/.kube/config", home != NULL ? home : "");
  if (home != NULL && access(path, F_OK) == 0) return vg_k8s_config_kubeconfig(cfg, path, err);
  if (getenv("KUBERNETES_SERVICE_HOST") != NULL) return vg_k8s_config_load(cfg, NULL, err);
  return vg_err_set(err,
                    "no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or create "
                    "~/.kube/config");
}

/* k8s_internal.h -- what the client's files share; not installed. */
#ifndef VG_K8S_INTERNAL_H
#define VG_K8S_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <time.h>

#include "k8s.h"

struct vg_k8s_client {
  struct vg_k8s_config cfg;
  long request_ms, connect_ms;
  pthread_mutex_t lock; /* guards token and token_read */
  char *token;          /* current bearer token (static or from token_file) */
  time_t token_read;    /* when token_file was last read */
};

int vg_k8s_read_file(const char *path, char **out, size_t *len, struct vg_err *err);
int vg_k8s_config_copy(struct vg_k8s_config *dst, const struct vg_k8s_config *src);

/* A curl handle with URL, auth, TLS, method and headers set. *headers must be
 * freed with curl_slist_free_all after the transfer. */
CURL *vg_k8s_easy(struct vg_k8s_client *c, const char *method, const char *url,
                  const char *content_type, struct curl_slist **headers, struct vg_err *err);
/* Fills err from a non-2xx response and returns the matching code. */
int vg_k8s_status_error(const char *method, const char *url, long status, const char *body,
                        struct vg_err *err);
/* Maps a curl failure to VG_K8S_EUNREACHABLE / EFAIL with a message. */
int vg_k8s_curl_error(const char *method, const char *url, CURLcode rc, const char *errbuf,
                      struct vg_err *err);

#endif

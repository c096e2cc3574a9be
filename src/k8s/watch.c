/* watch.c -- streaming watch with resourceVersion tracking; see k8s.h. */
#include "k8s_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "textbuf.h"

const char *vg_k8s_event_name(enum vg_k8s_event type) {
  static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
  return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

struct stream {
  CURL *h;
  const struct vg_k8s_watch_opts *opts;
  vg_k8s_watch_fn fn;
  void *arg;
  char *rv;
  size_t rv_len;
  long status;            /* HTTP status once known */
  struct vg_textbuf line; /* partial line (or the whole body of a non-200 answer) */
  int cb_ret;             /* non-zero value the callback stopped with */
  bool expired;           /* in-stream 410 */
  bool bad;               /* malformed event or out of memory */
  char bad_msg[200];
  int events;
};

static bool append(struct stream *s, const char *data, size_t n) {
  return vg_textbuf_add(&s->line, data, n);
}

/* One event line. Returns false to end the stream. */
static bool handle_line(struct stream *s, const char *line, size_t len) {
  while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ')) len--;
  if (len == 0) return true;
  json_tokener *tok = json_tokener_new();
  json_object *ev = json_tokener_parse_ex(tok, line, (int)len);
  bool complete = json_tokener_get_error(tok) == json_tokener_success;
  json_tokener_free(tok);
  json_object *type, *obj;
  if (!complete || ev == NULL || !json_object_object_get_ex(ev, "type", &type) ||
      !json_object_object_get_ex(ev, "object", &obj)) {
    snprintf(s->bad_msg, sizeof(s->bad_msg), "malformed watch event: %.120s", line);
    s->bad = true;
    json_object_put(ev);
    return false;
  }
  const char *t = json_object_get_string(type);
  enum vg_k8s_event et;
  if (strcmp(t, "ADDED") == 0)
    et = VG_K8S_ADDED;
  else if (strcmp(t, "MODIFIED") == 0)
    et = VG_K8S_MODIFIED;
  else if (strcmp(t, "DELETED") == 0)
    et = VG_K8S_DELETED;
  else if (strcmp(t, "BOOKMARK") == 0)
    et = VG_K8S_BOOKMARK;
  else if (strcmp(t, "ERROR") == 0)
    et = VG_K8S_ERROR;
  else {
    snprintf(s->bad_msg, sizeof(s->bad_msg), "unknown watch event type '%.40s'", t);
    s->bad = true;
    json_object_put(ev);
    return false;
  }
  if (et == VG_K8S_ERROR) {
    json_object *code;
    if (json_object_object_get_ex(obj, "code", &code) && json_object_get_int(code) == 410) {
      s->expired = true;
      json_object_put(ev);
      return false;
    }
  } else {
    json_object *meta, *rv;
    if (json_object_object_get_ex(obj, "metadata", &meta) &&
        json_object_object_get_ex(meta, "resourceVersion", &rv))
      snprintf(s->rv, s->rv_len, "%s", json_object_get_string(rv));
  }
  s->events++;
  int r = s->fn(et, obj, s->arg);
  json_object_put(ev);
  if (r != 0) {
    s->cb_ret = r;
    return false;
  }
  return true;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg) {
  struct stream *s = arg;
  size_t total = size * n;
  if (s->status == 0) curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200) { /* an error Status body: keep it whole */
    if (s->line.len < 65536 && !append(s, data, total)) return 0;
    return total;
  }
  if (s->opts->stop != NULL && *s->opts->stop) return 0;
  size_t start = 0;
  for (size_t i = 0; i < total; i++) {
    if (data[i] != '\n') continue;
    bool go;
    if (s->line.len > 0) {
      if (!append(s, data + start, i - start)) {
        s->bad = true;
        snprintf(s->bad_msg, sizeof(s->bad_msg), "out of memory");
        return 0;
      }
      go = handle_line(s, s->line.data, s->line.len);
      vg_textbuf_reset(&s->line);
    } else {
      go = handle_line(s, data + start, i - start);
    }
    start = i + 1;
    if (!go) return 0;
  }
  if (start < total && !append(s, data + start, total - start)) {
    s->bad = true;
    snprintf(s->bad_msg, sizeof(s->bad_msg), "out of memory");
    return 0;
  }
  return total;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)a, (void)b, (void)c, (void)d;
  struct stream *s = arg;
  return s->opts->stop != NULL && *s->opts->stop ? 1 : 0;
}

int vg_k8s_watch(struct vg_k8s_client *c, const struct vg_k8s_watch_opts *opts, char *rv,
                 size_t rv_len, vg_k8s_watch_fn fn, void *arg, struct vg_err *err) {
  const char *path = opts->path != NULL ? opts->path : "/api/v1/pods";
  int timeout_s = opts->timeout_seconds > 0 ? opts->timeout_seconds : 300;
  for (int streams = 0;; streams++) {
    if (opts->stop != NULL && *opts->stop) return 0;
    if (opts->max_streams > 0 && streams >= opts->max_streams) return 0;
    char url[4096], erv[256], esel[1024] = "";
    if (opts->field_selector != NULL) {
      char e[900];
      snprintf(esel, sizeof(esel), "&fieldSelector=%s",
               vg_k8s_escape(opts->field_selector, e, sizeof(e)));
    }
    snprintf(url, sizeof(url), "%s%s?watch=1&resourceVersion=%s&timeoutSeconds=%d%s%s",
             c->cfg.server, path, vg_k8s_escape(rv, erv, sizeof(erv)), timeout_s,
             opts->bookmarks ? "&allowWatchBookmarks=true" : "", esel);
    struct curl_slist *hl;
    CURL *h = vg_k8s_easy(c, "GET", url, NULL, &hl, err);
    if (h == NULL) return VG_K8S_EFAIL;
    struct stream s = {.h = h,
                       .opts = opts,
                       .fn = fn,
                       .arg = arg,
                       .rv = rv,
                       .rv_len = rv_len,
                       .line = {.first = 8192}};
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    /* The server ends the stream after timeoutSeconds; this only catches a
     * connection that went silent without closing. */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s + 30) * 1000L);
    time_t began = time(NULL);
    CURLcode rc = curl_easy_perform(h);
    if (s.status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &s.status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hl);

    int ret = 1; /* 1 = reconnect */
    if (s.cb_ret != 0) {
      ret = s.cb_ret;
    } else if (s.expired) {
      vg_err_set(err, "watch %s: resourceVersion expired (410 in stream); relist", url);
      ret = VG_K8S_EEXPIRED;
    } else if (s.bad) {
      ret = vg_err_set(err, "watch %s: %s", url, s.bad_msg);
    } else if (opts->stop != NULL && *opts->stop) {
      ret = 0;
    } else if (s.status != 0 && s.status != 200) {
      ret = vg_k8s_status_error("GET", url, s.status, s.line.data, err);
    } else if (s.status == 0 && rc != CURLE_OK) {
      ret = vg_k8s_curl_error("GET", url, rc, errbuf, err); /* never connected */
    } else if (rc != CURLE_OK) {
      vg_debug("k8s: watch %s ended (%s); resuming from %s", url, errbuf, rv);
    }
    vg_textbuf_free(&s.line);
    if (ret != 1) return ret;
    /* Do not spin if the server keeps closing at once. */
    if (s.events == 0 && time(NULL) - began < 1) usleep(200 * 1000);
  }
}

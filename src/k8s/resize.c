/* resize.c -- the resize annotations' texts; see resize.h and docs/resize.md. */
#include "resize.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json_get.h"

#define MAX_MEMORY (1LL << 50) /* 1 PiB: larger is a typo, not a GPU */

static json_object *parse_object(const char *what, const char *text, struct vg_err *err) {
  enum json_tokener_error jerr;
  json_object *o = text ? json_tokener_parse_verbose(text, &jerr) : NULL;
  if (o == NULL) {
    vg_err_set(err, "%s is not JSON", what);
    return NULL;
  }
  if (!json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    vg_err_set(err, "%s is not a JSON object", what);
    return NULL;
  }
  return o;
}

/* A printable, non-empty string of at most len-1 bytes into buf. */
static int get_text(json_object *o, const char *what, const char *key, char *buf, size_t len,
                    struct vg_err *err) {
  json_object *v = vg_json_get(o, key);
  if (v == NULL || !json_object_is_type(v, json_type_string))
    return vg_err_set(err, "%s: \"%s\" is missing or not a string", what, key);
  const char *s = json_object_get_string(v);
  size_t n = strlen(s);
  if (n == 0 || n >= len) return vg_err_set(err, "%s: \"%s\" is empty or too long", what, key);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return vg_err_set(err, "%s: \"%s\" has a control character", what, key);
  memcpy(buf, s, n + 1);
  return 0;
}

/* An optional integer in [lo, hi]; *out = dflt when absent. */
static int get_int(json_object *o, const char *what, const char *key, int64_t lo, int64_t hi,
                   int64_t dflt, int64_t *out, struct vg_err *err) {
  json_object *v = vg_json_get(o, key);
  *out = dflt;
  if (v == NULL) return 0;
  if (!json_object_is_type(v, json_type_int))
    return vg_err_set(err, "%s: \"%s\" is not an integer", what, key);
  int64_t n = json_object_get_int64(v);
  if (n < lo || n > hi)
    return vg_err_set(err, "%s: \"%s\" is %lld, outside %lld..%lld", what, key, (long long)n,
                      (long long)lo, (long long)hi);
  *out = n;
  return 0;
}

int vg_resize_request_parse(const char *text, struct vg_resize_request *r, struct vg_err *err) {
  static const char what[] = VG_RESIZE_REQUEST_ANNOTATION;
  memset(r, 0, sizeof(*r));
  json_object *o = parse_object(what, text, err);
  if (o == NULL) return -1;
  int64_t mem, cores;
  int rc = -1;
  if (get_text(o, what, "id", r->id, sizeof(r->id), err) == 0 &&
      get_text(o, what, "container", r->container, sizeof(r->container), err) == 0 &&
      get_int(o, what, "memory", 1, MAX_MEMORY, -1, &mem, err) == 0 &&
      get_int(o, what, "cores", 0, 100, -1, &cores, err) == 0) {
    r->memory = mem;
    r->cores = (int)cores;
    rc = mem < 0 && cores < 0 ? vg_err_set(err, "%s asks for neither memory nor cores", what) : 0;
  }
  json_object_put(o);
  return rc;
}

static const char *const phase_names[] = {"Accepted", "Applied", "Refused"};

const char *vg_resize_phase_name(enum vg_resize_phase p) {
  return (unsigned)p < 3 ? phase_names[p] : "?";
}

int vg_resize_status_parse(const char *text, struct vg_resize_status *s, struct vg_err *err) {
  static const char what[] = VG_RESIZE_STATUS_ANNOTATION;
  memset(s, 0, sizeof(*s));
  json_object *o = parse_object(what, text, err);
  if (o == NULL) return -1;
  char phase[16];
  int rc = -1;
  if (get_text(o, what, "id", s->id, sizeof(s->id), err) == 0 &&
      get_text(o, what, "phase", phase, sizeof(phase), err) == 0) {
    for (int p = 0; p < 3; p++)
      if (strcmp(phase, phase_names[p]) == 0) s->phase = (enum vg_resize_phase)p, rc = 0;
    if (rc != 0)
      vg_err_set(err, "%s: phase \"%s\" is none of Accepted, Applied, Refused", what, phase);
    json_object *reason = vg_json_get(o, "reason");
    if (rc == 0 && reason != NULL) {
      if (!json_object_is_type(reason, json_type_string))
        rc = vg_err_set(err, "%s: \"reason\" is not a string", what);
      else
        snprintf(s->reason, sizeof(s->reason), "%s", json_object_get_string(reason));
    }
  }
  json_object_put(o);
  return rc;
}

int vg_resize_node_parse(const char *text, char id[VG_RESIZE_ID_MAX], struct vg_err *err) {
  json_object *o = parse_object(VG_RESIZE_NODE_ANNOTATION, text, err);
  if (o == NULL) return -1;
  int rc = get_text(o, VG_RESIZE_NODE_ANNOTATION, "id", id, VG_RESIZE_ID_MAX, err);
  json_object_put(o);
  return rc;
}

static char *take_text(json_object *o) {
  char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return s;
}

char *vg_resize_request_format(const struct vg_resize_request *r) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(r->id));
  json_object_object_add(o, "container", json_object_new_string(r->container));
  if (r->memory >= 0) json_object_object_add(o, "memory", json_object_new_int64(r->memory));
  if (r->cores >= 0) json_object_object_add(o, "cores", json_object_new_int(r->cores));
  return take_text(o);
}

char *vg_resize_status_format(const struct vg_resize_status *s) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(s->id));
  json_object_object_add(o, "phase", json_object_new_string(vg_resize_phase_name(s->phase)));
  json_object_object_add(o, "reason", json_object_new_string(s->reason));
  return take_text(o);
}

char *vg_resize_node_format(const char *id) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(id));
  return take_text(o);
}

static const char *annotation(json_object *pod, const char *key) {
  return vg_json_get_str(vg_json_get(vg_json_get(pod, "metadata"), "annotations"), key);
}

void vg_resize_view_of(json_object *pod, struct vg_resize_view *v, struct vg_err *err) {
  memset(v, 0, sizeof(*v));
  struct vg_err e = {""};
  const char *t;
  if ((t = annotation(pod, VG_RESIZE_REQUEST_ANNOTATION)) != NULL) {
    v->has_request = true;
    v->bad_request = vg_resize_request_parse(t, &v->request, &e) != 0;
  }
  if ((t = annotation(pod, VG_RESIZE_NODE_ANNOTATION)) != NULL) {
    v->has_node = true;
    v->bad_node = vg_resize_node_parse(t, v->node_id, e.msg[0] ? NULL : &e) != 0;
  }
  if ((t = annotation(pod, VG_RESIZE_STATUS_ANNOTATION)) != NULL) {
    v->has_status = true;
    v->bad_status = vg_resize_status_parse(t, &v->status, e.msg[0] ? NULL : &e) != 0;
  }
  const char *label =
      vg_json_get_str(vg_json_get(vg_json_get(pod, "metadata"), "labels"), VG_RESIZE_LABEL);
  v->open = label != NULL && strcmp(label, VG_RESIZE_LABEL_OPEN) == 0;
  if (err != NULL && e.msg[0]) *err = e;
}

void vg_resize_new_id(char id[VG_RESIZE_ID_MAX]) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned rnd = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16);
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd)) rnd ^= (unsigned)ts.tv_sec;
    close(fd);
  }
  snprintf(id, VG_RESIZE_ID_MAX, "%lld-%08x", (long long)ts.tv_sec, rnd);
}

int64_t vg_resize_memory(const struct vg_resize_request *r, const struct vg_assign_gpu *now) {
  return r->memory >= 0 ? r->memory : now->memory;
}

int vg_resize_cores(const struct vg_resize_request *r, const struct vg_assign_gpu *now) {
  return r->cores >= 0 ? r->cores : now->cores;
}

int vg_resize_status_put(json_object *ann, const char *id, enum vg_resize_phase phase,
                         const char *reason) {
  struct vg_resize_status st = {.phase = phase};
  snprintf(st.id, sizeof(st.id), "%s", id);
  snprintf(st.reason, sizeof(st.reason), "%s", reason);
  char *text = vg_resize_status_format(&st);
  if (text == NULL) return -1;
  json_object_object_add(ann, VG_RESIZE_STATUS_ANNOTATION, json_object_new_string(text));
  free(text);
  return 0;
}

int vg_resize_refusal_event(struct vg_k8s_client *c, json_object *pod, const char *id,
                            const char *why, const char *component, char *msg, size_t len,
                            struct vg_err *err) {
  snprintf(msg, len, "resize %s refused: %s", id, why);
  return vg_k8s_pod_event(c, pod, "Warning", "ResizeRefused", msg, component, err);
}

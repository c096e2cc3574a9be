/* decide.c -- see decide.h. */
#include "decide.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json_get.h"
#include "pod_quantity.h"

/* What one container asks for. */
struct asks {
  const char *container; /* its name ("?" if none) */
  const char *resource;  /* the first managed resource above zero, or NULL */
  bool malformed;        /* why says what */
};

static void set_why(struct vg_wh_decision *d, enum vg_wh_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_why(struct vg_wh_decision *d, enum vg_wh_verdict v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->why, sizeof(d->why), fmt, ap);
  va_end(ap);
  d->verdict = v;
}

/* One of resources.limits / resources.requests. A quantity that does not
 * parse is refused here rather than passed on to the scheduler: the API
 * server already insists that extended resources are whole numbers, so this
 * only meets hand-made requests, and saying so at creation is clearest. */
static void scan_list(json_object *list, const char *which, const struct vg_wh_resources *res,
                      struct asks *a, struct vg_wh_decision *d) {
  if (list == NULL || json_object_is_type(list, json_type_null)) return;
  if (!json_object_is_type(list, json_type_object)) {
    a->malformed = true;
    set_why(d, VG_WH_REFUSE, "container \"%.64s\": resources.%s is not an object", a->container,
            which);
    return;
  }
  json_object_object_foreach(list, name, value) {
    if (!vg_wh_resources_has(res, name)) continue;
    int64_t q;
    struct vg_err err = {{0}};
    if (vg_pod_quantity(value, VG_QTY_COUNT, &q, &err) != 0) {
      a->malformed = true;
      set_why(d, VG_WH_REFUSE, "container \"%.64s\": resources.%s %.100s: %.200s", a->container,
              which, name, err.msg);
      return;
    }
    if (q > 0 && a->resource == NULL) a->resource = name;
  }
}

static struct asks container_asks(json_object *ctr, const struct vg_wh_resources *res,
                                  struct vg_wh_decision *d) {
  struct asks a = {.container = vg_json_get_str(ctr, "name")};
  if (a.container == NULL) a.container = "?";
  if (ctr == NULL || !json_object_is_type(ctr, json_type_object)) {
    a.malformed = true;
    set_why(d, VG_WH_REFUSE, "a container is not an object");
    return a;
  }
  json_object *r = vg_json_get(ctr, "resources");
  scan_list(vg_json_get(r, "limits"), "limits", res, &a, d);
  if (!a.malformed) scan_list(vg_json_get(r, "requests"), "requests", res, &a, d);
  return a;
}

static bool privileged(json_object *ctr) {
  json_object *p = vg_json_get(vg_json_get(ctr, "securityContext"), "privileged");
  return p != NULL && json_object_is_type(p, json_type_boolean) && json_object_get_boolean(p);
}

/* spec.<key>: NULL/absent is an empty list; anything but an array is
 * refused. Returns false when d is decided (refused). */
static bool list_of(json_object *spec, const char *key, json_object **out,
                    struct vg_wh_decision *d) {
  *out = vg_json_get(spec, key);
  if (*out == NULL || json_object_is_type(*out, json_type_null)) {
    *out = NULL;
    return true;
  }
  if (json_object_is_type(*out, json_type_array)) return true;
  set_why(d, VG_WH_REFUSE, "spec.%s is not an array", key);
  return false;
}

/* The kubelet runs init containers before the app containers and hands
 * their devices on, but vgpu's assignment (vgpu.io/assigned) names app
 * containers only: the extender fits and accounts app containers' slices,
 * and the device plugin would place an init container's GPUs where nothing
 * accounted them. The extender refuses such pods at filter time
 * (src/scheduler/extender_request.c); refusing here says it at creation. */
static bool refuse_init(json_object *init, const struct vg_wh_resources *res,
                        struct vg_wh_decision *d) {
  for (size_t i = 0; init != NULL && i < json_object_array_length(init); i++) {
    struct asks a = container_asks(json_object_array_get_idx(init, i), res, d);
    if (a.malformed) return true;
    if (a.resource == NULL) continue;
    set_why(d, VG_WH_REFUSE,
            "init container \"%.64s\" asks for %.100s: vgpu places and accounts GPU slices for "
            "app containers only; move the request to an app container (docs/admission.md)",
            a.container, a.resource);
    return true;
  }
  return false;
}

/* The first app container that asks; refuses a privileged one, which sees
 * every GPU device of the node and so escapes its slice's isolation. */
static const char *app_asks(json_object *ctrs, const struct vg_wh_resources *res,
                            struct vg_wh_decision *d) {
  const char *first = NULL;
  for (size_t i = 0; ctrs != NULL && i < json_object_array_length(ctrs); i++) {
    json_object *c = json_object_array_get_idx(ctrs, i);
    struct asks a = container_asks(c, res, d);
    if (a.malformed) return NULL;
    if (a.resource == NULL) continue;
    if (privileged(c)) {
      set_why(d, VG_WH_REFUSE,
              "container \"%.64s\" asks for %.100s and is privileged: a privileged container "
              "sees every GPU of the node and bypasses vgpu's isolation; drop "
              "securityContext.privileged (docs/admission.md)",
              a.container, a.resource);
      return NULL;
    }
    if (first == NULL) first = a.resource;
  }
  return first;
}

static void route(json_object *pod, const char *resource, struct vg_wh_decision *d) {
  json_object *ann = vg_json_get(vg_json_get(pod, "metadata"), "annotations");
  const char *was = vg_json_get_str(vg_json_get(pod, "spec"), "schedulerName");
  if (was != NULL && strcmp(was, VG_WH_SCHEDULER) == 0) {
    set_why(d, VG_WH_ALLOW, "asks for %.100s and is already for %s", resource, VG_WH_SCHEDULER);
    return;
  }
  snprintf(d->original, sizeof(d->original), "%s",
           was != NULL && *was != '\0' ? was : VG_WH_DEFAULT_SCHEDULER);
  d->annotations_present = ann != NULL && json_object_is_type(ann, json_type_object);
  /* A pod copied from a routed one keeps the first original. */
  d->record_original = vg_json_get(ann, VG_WH_ORIGINAL_ANNOTATION) == NULL;
  set_why(d, VG_WH_ROUTE, "asks for %.100s: schedulerName %.100s -> %s", resource, d->original,
          VG_WH_SCHEDULER);
}

/* The assignment annotation of pod: 0 absent, 1 a string (in *text), -1
 * something else (refused: nothing of ours writes that). */
static int assigned_of(json_object *pod, const char **text) {
  json_object *v = vg_json_get(vg_json_get(vg_json_get(pod, "metadata"), "annotations"),
                               VG_WH_ASSIGNED_ANNOTATION);
  *text = NULL;
  if (v == NULL) return 0;
  if (!json_object_is_type(v, json_type_string)) return -1;
  *text = json_object_get_string(v);
  return 1;
}

void vg_wh_decide_update(json_object *old, json_object *pod, struct vg_wh_decision *d) {
  memset(d, 0, sizeof(*d));
  if (pod == NULL || !json_object_is_type(pod, json_type_object) || old == NULL ||
      !json_object_is_type(old, json_type_object)) {
    set_why(d, VG_WH_REFUSE, "request.object or request.oldObject is not a Pod object");
    return;
  }
  const char *was, *now;
  int a = assigned_of(old, &was), b = assigned_of(pod, &now);
  if (a >= 0 && a == b && (a == 0 || strcmp(was, now) == 0)) {
    set_why(d, VG_WH_ALLOW, "%s unchanged", VG_WH_ASSIGNED_ANNOTATION);
    return;
  }
  set_why(d, VG_WH_REFUSE,
          "the annotation %s is vgpu-scheduler's record of the GPU slices it placed, from which "
          "the node agent grants the containers their limits; it is written when the pod is "
          "bound and cannot be changed (docs/security.md)",
          VG_WH_ASSIGNED_ANNOTATION);
}

void vg_wh_decide(json_object *pod, const struct vg_wh_resources *res, struct vg_wh_decision *d) {
  memset(d, 0, sizeof(*d));
  if (pod == NULL || !json_object_is_type(pod, json_type_object)) {
    set_why(d, VG_WH_REFUSE, "request.object is not a Pod object");
    return;
  }
  const char *assigned;
  if (assigned_of(pod, &assigned) != 0) {
    set_why(d, VG_WH_REFUSE,
            "the annotation %s is written by vgpu-scheduler when it binds the pod (the node agent "
            "grants the containers their limits from it); a pod cannot be created with it "
            "(docs/security.md)",
            VG_WH_ASSIGNED_ANNOTATION);
    return;
  }
  const char *skip = vg_json_get_str(vg_json_get(vg_json_get(pod, "metadata"), "annotations"),
                                     VG_WH_OPT_OUT_ANNOTATION);
  if (skip != NULL && strcmp(skip, VG_WH_OPT_OUT_VALUE) == 0) {
    set_why(d, VG_WH_ALLOW, "opted out with %s: %s", VG_WH_OPT_OUT_ANNOTATION, skip);
    return;
  }
  json_object *spec = vg_json_get(pod, "spec"), *init, *ctrs;
  if (!list_of(spec, "initContainers", &init, d) || !list_of(spec, "containers", &ctrs, d)) return;
  if (refuse_init(init, res, d)) return;
  const char *resource = app_asks(ctrs, res, d);
  if (d->verdict == VG_WH_REFUSE) return;
  if (resource == NULL) {
    set_why(d, VG_WH_ALLOW, "asks for no managed resource");
    return;
  }
  route(pod, resource, d);
}

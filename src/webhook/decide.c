/* decide.c -- see decide.h. */
#include "decide.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dialect.h"
#include "json_get.h"
#include "pod_quantity.h"
#include "resize.h"

/* CCE's names (seed 004; they cannot be renamed): memory in 128 MiB units,
 * and a compute share that may only come with memory. */
#define CCE_MEM vg_resource_name(NULL, VG_ROLE_CCE_MEM)
#define CCE_CORES vg_resource_name(NULL, VG_ROLE_CCE_CORES)

/* What one container asks for. */
struct asks {
  const char *container; /* its name ("?" if none) */
  const char *resource;  /* the first managed resource above zero, or NULL */
  bool cce_cores;        /* a managed CCE_CORES above zero */
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
    /* A 0 of any other resource asks for none; CCE defines its memory as
     * a positive integer, and a pod naming it with 0 would otherwise go
     * to the default scheduler and run without the slice it names. */
    if (q == 0 && strcmp(name, CCE_MEM) == 0) {
      a->malformed = true;
      set_why(d, VG_WH_REFUSE,
              "container \"%.64s\": resources.%s %s is 0; CCE requires a positive integer "
              "number of 128 MiB units",
              a->container, which, CCE_MEM);
      return;
    }
    if (q > 0 && strcmp(name, CCE_CORES) == 0) a->cce_cores = true;
    if (q > 0 && a->resource == NULL) a->resource = name;
  }
}

/* CCE cannot isolate compute alone (seed 004: the two "cannot be set
 * separately"); the extender refuses it at filter time, this says it at
 * creation. The memory is looked for whether or not --resources manages
 * it: only its absence is wrong. */
static void refuse_cce_cores_alone(json_object *r, struct asks *a, struct vg_wh_decision *d) {
  if (!a->cce_cores || vg_json_get(vg_json_get(r, "limits"), CCE_MEM) != NULL ||
      vg_json_get(vg_json_get(r, "requests"), CCE_MEM) != NULL)
    return;
  a->malformed = true;
  set_why(d, VG_WH_REFUSE,
          "container \"%.64s\" asks for %s without %s: CCE isolates compute only together "
          "with memory",
          a->container, CCE_CORES, CCE_MEM);
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
  if (!a.malformed) refuse_cce_cores_alone(r, &a, d);
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
 * (src/extender/extender_request.c); refusing here says it at creation. */
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

/* The label that scopes the guard's calls (decide.h): added unless there. */
static void mark(json_object *pod, struct vg_wh_decision *d) {
  json_object *labels = vg_json_get(vg_json_get(pod, "metadata"), "labels");
  const char *v = vg_json_get_str(labels, VG_WH_MANAGED_LABEL);
  d->add_label = v == NULL || strcmp(v, VG_WH_MANAGED_VALUE) != 0;
  d->labels_present = labels != NULL && json_object_is_type(labels, json_type_object);
}

static void route(json_object *pod, const char *resource, struct vg_wh_decision *d) {
  json_object *ann = vg_json_get(vg_json_get(pod, "metadata"), "annotations");
  const char *was = vg_json_get_str(vg_json_get(pod, "spec"), "schedulerName");
  mark(pod, d);
  if (was != NULL && strcmp(was, VG_WH_SCHEDULER) == 0) {
    if (d->add_label)
      set_why(d, VG_WH_ROUTE, "asks for %.100s, already for %s: label %s", resource,
              VG_WH_SCHEDULER, VG_WH_MANAGED_LABEL);
    else
      set_why(d, VG_WH_ALLOW, "asks for %.100s and is already for %s", resource, VG_WH_SCHEDULER);
    return;
  }
  d->set_scheduler = true;
  snprintf(d->original, sizeof(d->original), "%s",
           was != NULL && *was != '\0' ? was : VG_WH_DEFAULT_SCHEDULER);
  d->annotations_present = ann != NULL && json_object_is_type(ann, json_type_object);
  /* A pod copied from a routed one keeps the first original. */
  d->record_original = vg_json_get(ann, VG_WH_ORIGINAL_ANNOTATION) == NULL;
  set_why(d, VG_WH_ROUTE, "asks for %.100s: schedulerName %.100s -> %s", resource, d->original,
          VG_WH_SCHEDULER);
}

/* The annotations vgpu's components keep on a running pod, and who writes
 * each (decide.h): the one table both the CREATE and the UPDATE guard read. */
static const struct guarded {
  const char *key;
  bool scheduler, node; /* may write it */
  const char *records;  /* what it records, for the messages */
} guarded[] = {
    {VG_WH_ASSIGNED_ANNOTATION, true, false,
     "the GPU slices placed, from which the node agent grants each container its limits"},
    {VG_WH_ASSIGNED_MAC_ANNOTATION, true, false,
     "vgpu-scheduler's signature over vgpu.io/assigned, which the node agent checks"},
    {VG_RESIZE_NODE_ANNOTATION, false, true,
     "that the node checked a resize request and put any decrease in force"},
    {VG_RESIZE_STATUS_ANNOTATION, true, true, "a resize request's outcome"},
};
#define N_GUARDED (sizeof(guarded) / sizeof(guarded[0]))

/* Annotation key of pod: 0 absent, 1 a string (in *text), -1 something else
 * (nothing of ours writes that, so it counts as changed). */
static int annotation_of(json_object *pod, const char *key, const char **text) {
  json_object *v = vg_json_get(vg_json_get(vg_json_get(pod, "metadata"), "annotations"), key);
  *text = NULL;
  if (v == NULL) return 0;
  if (!json_object_is_type(v, json_type_string)) return -1;
  *text = json_object_get_string(v);
  return 1;
}

/* Set, changed or removed between old and pod (removal is a change too). */
static bool changed(json_object *old, json_object *pod, const char *key) {
  const char *was, *now;
  int a = annotation_of(old, key, &was), b = annotation_of(pod, key, &now);
  return !(a >= 0 && a == b && (a == 0 || strcmp(was, now) == 0));
}

static bool may_write(const struct guarded *g, const char *user, const struct vg_wh_writers *w) {
  return (g->scheduler && vg_wh_users_has(&w->scheduler, user)) ||
         (g->node && vg_wh_users_has(&w->node, user));
}

/* Who writes g, in words. */
static const char *writer_names(const struct guarded *g) {
  if (g->scheduler && g->node) return VG_WH_SCHEDULER " and the node agent";
  return g->scheduler ? VG_WH_SCHEDULER : "the node agent";
}

/* "vgpu-scheduler (its users)", "the node agent (...)", or both joined by
 * "or": who may write g, as the refusal names them. */
static void writers_of(const struct guarded *g, const struct vg_wh_writers *w, char *out,
                       size_t len) {
  char s[160], n[160];
  vg_wh_users_list(&w->scheduler, s, sizeof(s));
  vg_wh_users_list(&w->node, n, sizeof(n));
  if (g->scheduler && g->node)
    snprintf(out, len, "%s (%s) or the node agent (%s)", VG_WH_SCHEDULER, s, n);
  else if (g->scheduler)
    snprintf(out, len, "%s (%s)", VG_WH_SCHEDULER, s);
  else
    snprintf(out, len, "the node agent (%s)", n);
}

static void refuse_change(const struct guarded *g, const char *user, const struct vg_wh_writers *w,
                          struct vg_wh_decision *d) {
  char who[360];
  writers_of(g, w, who, sizeof(who));
  char by[140];
  if (user != NULL)
    snprintf(by, sizeof(by), "user %.100s", user);
  else
    snprintf(by, sizeof(by), "a request without request.userInfo.username");
  set_why(d, VG_WH_REFUSE,
          "the annotation %s cannot be changed by %s: only %s may change it (it records %s; "
          "docs/security.md)",
          g->key, by, who, g->records);
}

/* The label VG_WH_MANAGED_LABEL on old, changed or removed in pod: without it
 * the API server would stop sending the pod's UPDATEs to the guard, so no
 * one may change it. Returns true when d is decided (refused). */
static bool unmarked(json_object *old, json_object *pod, struct vg_wh_decision *d) {
  const char *was =
      vg_json_get_str(vg_json_get(vg_json_get(old, "metadata"), "labels"), VG_WH_MANAGED_LABEL);
  const char *now =
      vg_json_get_str(vg_json_get(vg_json_get(pod, "metadata"), "labels"), VG_WH_MANAGED_LABEL);
  if (was == NULL || (now != NULL && strcmp(was, now) == 0)) return false;
  set_why(d, VG_WH_REFUSE,
          "the label %s marks a pod that vgpu-webhook sent to %s; it cannot be changed or "
          "removed (the API server checks this pod's updates against vgpu's annotations only "
          "while it is there; docs/admission.md)",
          VG_WH_MANAGED_LABEL, VG_WH_SCHEDULER);
  return true;
}

void vg_wh_decide_update(json_object *old, json_object *pod, const char *user,
                         const struct vg_wh_writers *w, struct vg_wh_decision *d) {
  memset(d, 0, sizeof(*d));
  if (pod == NULL || !json_object_is_type(pod, json_type_object) || old == NULL ||
      !json_object_is_type(old, json_type_object)) {
    set_why(d, VG_WH_REFUSE, "request.object or request.oldObject is not a Pod object");
    return;
  }
  if (user != NULL && *user == '\0') user = NULL; /* no name is no one's */
  if (unmarked(old, pod, d)) return;
  for (size_t i = 0; i < N_GUARDED; i++) {
    if (!changed(old, pod, guarded[i].key) || may_write(&guarded[i], user, w)) continue;
    refuse_change(&guarded[i], user, w, d);
    return;
  }
  set_why(d, VG_WH_ALLOW, "vgpu's annotations unchanged, or changed by their writer");
}

/* Only a scheduled pod carries these; a pod created with one is usually a
 * copy of one (kubectl get -o yaml), so the message says what to remove.
 * Returns true when d is decided (refused). */
static bool refuse_preset(json_object *pod, struct vg_wh_decision *d) {
  for (size_t i = 0; i < N_GUARDED; i++) {
    const char *text;
    if (annotation_of(pod, guarded[i].key, &text) == 0) continue;
    const struct guarded *g = &guarded[i];
    set_why(d, VG_WH_REFUSE,
            "the annotation %s is written on a scheduled pod by %s (it records %s); a pod cannot "
            "be created with it: remove it (a copy of a scheduled pod, as kubectl get -o yaml "
            "prints it, carries it; docs/security.md)",
            g->key, writer_names(g), g->records);
    return true;
  }
  return false;
}

void vg_wh_decide_create_guard(json_object *pod, struct vg_wh_decision *d) {
  memset(d, 0, sizeof(*d));
  if (pod == NULL || !json_object_is_type(pod, json_type_object))
    set_why(d, VG_WH_REFUSE, "request.object is not a Pod object");
  else if (!refuse_preset(pod, d))
    set_why(d, VG_WH_ALLOW, "created without vgpu's annotations");
}

void vg_wh_decide(json_object *pod, const struct vg_wh_resources *res, struct vg_wh_decision *d) {
  memset(d, 0, sizeof(*d));
  if (pod == NULL || !json_object_is_type(pod, json_type_object)) {
    set_why(d, VG_WH_REFUSE, "request.object is not a Pod object");
    return;
  }
  if (refuse_preset(pod, d)) return;
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

/*
 * resize_opts.c -- the command line of `kubectl vgpu resize`.
 *
 * Options are kubectl's where kubectl has them (-n, -c, -o, --kubeconfig,
 * "pod/NAME"), so that the verb reads like the rest of kubectl; values may
 * follow as the next word, after '=' or, for the one-letter ones, directly
 * ("-nprod"). Every value is checked here, before the cluster is asked
 * anything, and a bad one is named with what would be accepted.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kubectl_vgpu.h"
#include "size.h"
#include "opt.h"

#define DEFAULT_TIMEOUT_S 60
#define MAX_TIMEOUT_S 86400
#define MAX_MEMORY (INT64_C(1) << 50) /* what the request annotation allows (resize.c) */

static void usage(FILE *to) {
  fputs(
      "usage: kubectl vgpu resize POD [-n NAMESPACE] [-c CONTAINER] [--memory SIZE]\n"
      "                           [--cores PCT] [--timeout SECONDS] [--no-wait]\n"
      "                           [--kubeconfig FILE] [-o json]\n"
      "\n"
      "Changes the GPU memory and/or compute share per GPU of a running container that\n"
      "vgpu-scheduler placed: writes the request on the pod (annotation\n"
      "vgpu.io/resize-request, label vgpu.io/resize=requested) and waits until the node\n"
      "agent has applied it or someone refused it.\n"
      "\n"
      "  POD                   NAME or pod/NAME\n"
      "  -n, --namespace NS    default: the kubeconfig context's namespace, else default\n"
      "  -c, --container NAME  the container; may be left out when the pod has one\n"
      "                        container with GPUs\n"
      "  --memory SIZE         new GPU memory per GPU. SIZE: a number with a unit:\n"
      "                        k/m/g/t or Ki/Mi/Gi/Ti (binary: 3000m = 3000 MiB),\n"
      "                        KB/MB/GB/TB (decimal); a fraction such as 1.5g is fine;\n"
      "                        a bare number is bytes\n"
      "  --cores PCT           new compute share per GPU, 0..100 (0 = no compute limit)\n"
      "                        (at least one of --memory and --cores)\n"
      "  --timeout SECONDS     how long to wait for the answer (default 60; 1..86400,\n"
      "                        a trailing 's' is allowed)\n"
      "  --no-wait             write the request and exit 0 without waiting\n"
      "  --kubeconfig FILE     default: $KUBECONFIG (its first file), else\n"
      "                        ~/.kube/config, else in-cluster\n"
      "  -o, --output json     print the outcome as JSON (bytes) instead of a line\n"
      "  -h, --help, --version\n"
      "\n"
      "Exit status: 0 applied (or requested, with --no-wait); 1 refused, or an error\n"
      "(API server, pod, container, a resize already in progress); 2 no answer within\n"
      "--timeout (the message says who has not answered); 64 bad usage.\n",
      to);
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Says in one line what is wrong and where the options are; returns KV_EXIT_USAGE. */
static int bad_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(KV_RESIZE_PREFIX, stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs(" (see kubectl vgpu resize --help)\n", stderr); /* one line, as every program answers */
  return KV_EXIT_USAGE;
}

static const char *either(int argc, char **argv, int *i, const char *s, const char *l) {
  const char *v = vg_opt_value(argc, argv, i, l);
  return v != NULL || s == NULL ? v : vg_opt_value(argc, argv, i, s);
}

static int set_memory(struct kv_resize_opts *o, const char *v) {
  struct vg_err err = {""};
  uint64_t bytes;
  if (vg_parse_size(v, &bytes, &err) != 0) return bad_usage("--memory: %s", err.msg);
  if (bytes == 0) return bad_usage("--memory '%s': a container needs some memory (more than 0)", v);
  if (bytes > (uint64_t)MAX_MEMORY) return bad_usage("--memory '%s': more than 1 PiB per GPU", v);
  o->memory = (int64_t)bytes;
  return 0;
}

static int set_cores(struct kv_resize_opts *o, const char *v) {
  struct vg_err err = {""};
  unsigned pct;
  if (vg_parse_percent(v, &pct, &err) != 0) return bad_usage("--cores: %s", err.msg);
  o->cores = (int)pct;
  return 0;
}

/* Whole seconds, "60" or "60s". */
static int set_timeout(struct kv_resize_opts *o, const char *v) {
  char *end;
  long s = strtol(v, &end, 10);
  if (end != v && *end == 's') end++;
  if (end == v || *end != '\0' || v[0] == '-' || v[0] == '+' || s < 1 || s > MAX_TIMEOUT_S)
    return bad_usage("--timeout '%s': use whole seconds from 1 to 86400", v);
  o->timeout_s = (int)s;
  return 0;
}

static int set_output(struct kv_resize_opts *o, const char *v) {
  if (strcmp(v, "json") != 0) return bad_usage("-o '%s': the one output format is json", v);
  o->json = true;
  return 0;
}

/* "NAME" or "pod/NAME" (kubectl's "pods/" and "po/" too). */
static int set_pod(struct kv_resize_opts *o, const char *arg) {
  static const char *const kinds[] = {"pod/", "pods/", "po/"};
  if (o->pod != NULL) return bad_usage("one pod at a time (got '%s' and '%s')", o->pod, arg);
  const char *name = arg;
  for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
    if (strncmp(arg, kinds[k], strlen(kinds[k])) == 0) name = arg + strlen(kinds[k]);
  if (strchr(name, '/') != NULL)
    return bad_usage("'%s': only pods can be resized: give NAME or pod/NAME", arg);
  if (*name == '\0') return bad_usage("'%s': the pod name is empty", arg);
  o->pod = name;
  return 0;
}

/* One option with a value at argv[*i]: 0 done, 1 not one of these, else an exit status. */
static int valued_option(int argc, char **argv, int *i, struct kv_resize_opts *o) {
  static const struct {
    const char *s, *l;
  } names[] = {{"-n", "--namespace"}, {"-c", "--container"},  {NULL, "--memory"}, {NULL, "--cores"},
               {NULL, "--timeout"},   {NULL, "--kubeconfig"}, {"-o", "--output"}};
  for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
    const char *opt = argv[*i], *v = either(argc, argv, i, names[k].s, names[k].l);
    if (v == NULL) continue;
    if (*v == '\0') return bad_usage("%s needs a value", opt);
    switch (k) {
      case 0:
        o->ns = v;
        return 0;
      case 1:
        o->container = v;
        return 0;
      case 2:
        return set_memory(o, v);
      case 3:
        return set_cores(o, v);
      case 4:
        return set_timeout(o, v);
      case 5:
        o->kubeconfig = v;
        return 0;
      default:
        return set_output(o, v);
    }
  }
  return 1;
}

static int one_arg(int argc, char **argv, int *i, struct kv_resize_opts *o, bool *done) {
  const char *a = argv[*i];
  if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
    usage(stdout);
    return *done = true, KV_EXIT_OK;
  }
  if (strcmp(a, "--version") == 0) {
    printf(KV_PROG " %s\n", VG_VERSION);
    return *done = true, KV_EXIT_OK;
  }
  if (strcmp(a, "--no-wait") == 0) return o->no_wait = true, 0;
  int rc = valued_option(argc, argv, i, o);
  if (rc != 1) return rc;
  if (a[0] == '-' && a[1] != '\0') {
    static const char *const known[] = {"--help",   "--version", "--no-wait", "--container",
                                        "--memory", "--cores",   "--timeout", "--kubeconfig",
                                        "--output", NULL};
    const char *near = vg_opt_suggest(a, known);
    if (near != NULL) return bad_usage("unknown option '%s' (did you mean %s?)", a, near);
    return bad_usage("unknown option '%s'", a);
  }
  return set_pod(o, a);
}

int kv_resize_parse(int argc, char **argv, struct kv_resize_opts *o, bool *done) {
  *o = (struct kv_resize_opts){.memory = -1, .cores = -1, .timeout_s = DEFAULT_TIMEOUT_S};
  *done = false;
  for (int i = 1; i < argc; i++) {
    int rc = one_arg(argc, argv, &i, o, done);
    if (rc != 0 || *done) return rc;
  }
  if (o->pod == NULL) return bad_usage("which pod? give NAME or pod/NAME");
  if (o->memory < 0 && o->cores < 0)
    return bad_usage("nothing to change: give --memory SIZE, --cores PCT or both");
  return 0;
}

/*
 * main.c -- kubectl-inspect-gpushare: options, the user's kubeconfig, and
 * what the exit status says.
 *
 *   kubectl inspect gpushare [-d] [-o table|wide|json] [--kubeconfig FILE]
 *                            [--resource KEY=NAME]... [NODE]
 *
 * kubectl finds this program on $PATH by its name and passes the remaining
 * arguments. Credentials come from --kubeconfig, else $KUBECONFIG (its first
 * file), else ~/.kube/config, else the in-cluster service account when run
 * in a pod. Exit status: 0 shown, 1 the cluster could not be read (the
 * message says which server, which kubeconfig, and why), 2 bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dialect.h"
#include "inspect.h"
#include "opt.h"

#define PROG "kubectl-inspect-gpushare"

enum ins_format { INS_TABLE, INS_WIDE, INS_JSON };

struct opts {
  bool detail;
  enum ins_format format;
  const char *kubeconfig, *node;
  struct vg_resource_names names; /* defaults, and --resource's renames */
};

static void usage(FILE *to) {
  fprintf(to,
          "usage: kubectl inspect gpushare [-d] [-o table|wide|json] [--kubeconfig FILE]\n"
          "                                [--resource KEY=NAME]... [NODE]\n"
          "       kubectl inspect gpushare --version\n"
          "\n"
          "Shows per node and per GPU the GPU memory allocated to pods out of the total, and\n"
          "the cluster total, in the layout of Aliyun's gpushare plugin.\n"
          "Reads the Nodes' vgpu.io/gpu-inventory and the Pods' vgpu.io/assigned annotations,\n"
          "so it works for every resource dialect (%s, %s,\n"
          "%s time-slicing, %s). Memory is in GiB or MiB as\n"
          "the gpushare dialect is configured (MiB without it). Pods holding GPU resources\n"
          "without an assignment are counted in PENDING (UNASSIGNED with -o wide).\n"
          "\n"
          "  -d, --details        one block per node with the memory of each pod on each GPU\n"
          "  -o, --output FORMAT  table (default: Aliyun's layout), wide (adds the compute\n"
          "                       share, GPU Cores in percent points, cordoned nodes and\n"
          "                       unhealthy GPUs) or json (bytes, for scripts)\n"
          "  --kubeconfig FILE    default: $KUBECONFIG, else ~/.kube/config, else in-cluster\n"
          "  --resource KEY=NAME  the name a resource was renamed to in the device plugin's\n"
          "                       configuration, KEY its key there (repeatable; %s)\n"
          "  NODE                 only this node\n"
          "\n"
          "Exit status: 0 shown, 1 the cluster could not be read, 2 bad usage.\n",
          vg_resource_name(NULL, VG_ROLE_VGPU_COUNT), vg_resource_name(NULL, VG_ROLE_GPUSHARE_MEM),
          vg_resource_name(NULL, VG_ROLE_GPU), vg_resource_name(NULL, VG_ROLE_CCE_MEM),
          vg_resource_keys());
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, PROG ": ");
  fprintf(stderr, fmt, arg);
  fputs(" (see " PROG " --help)\n", stderr);
  return 2;
}

static int unknown_option(const char *a) {
  static const char *const known[] = {"--help",       "--version",  "--details", "--output",
                                      "--kubeconfig", "--resource", NULL};
  vg_opt_unknown(PROG, a, known); /* one line, as every program answers */
  return 2;
}

static int set_output(struct opts *o, const char *v) {
  if (strcmp(v, "json") == 0)
    o->format = INS_JSON;
  else if (strcmp(v, "table") == 0)
    o->format = INS_TABLE;
  else if (strcmp(v, "wide") == 0)
    o->format = INS_WIDE;
  else
    return bad_usage("unknown output format '%s' (use table, wide or json)", v);
  return 0;
}

static int parse_args(int argc, char **argv, struct opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 1;
    } else if (strcmp(a, "--version") == 0) {
      printf(PROG " %s\n", VG_VERSION);
      return 1;
    } else if (strcmp(a, "-d") == 0 || strcmp(a, "--details") == 0) {
      o->detail = true;
    } else if ((v = vg_opt_value(argc, argv, &i, "-o")) != NULL ||
               (v = vg_opt_value(argc, argv, &i, "--output")) != NULL) {
      if (set_output(o, v) != 0) return 2;
    } else if ((v = vg_opt_value(argc, argv, &i, "--kubeconfig")) != NULL) {
      if (*v == '\0') return bad_usage("%s needs a file", "--kubeconfig");
      o->kubeconfig = v;
    } else if ((v = vg_opt_value(argc, argv, &i, "--resource")) != NULL) {
      struct vg_err err = {""};
      if (vg_resource_names_set(&o->names, v, &err) != 0) return bad_usage("%s", err.msg);
    } else if (a[0] == '-') {
      return unknown_option(a);
    } else if (o->node != NULL) {
      return bad_usage("one NODE at most (got a second one, '%s')", a);
    } else {
      o->node = a;
    }
  }
  if (o->detail && o->format == INS_JSON)
    return bad_usage("%s",
                     "-d and -o json do not go together "
                     "(the JSON always has the per-pod detail)");
  return 0;
}

static int api_failure(int rc, const struct vg_k8s_config *cfg, const struct vg_err *err) {
  if (rc == VG_K8S_EUNREACHABLE)
    fprintf(stderr,
            PROG
            ": cannot reach the Kubernetes API server %s (from %s): %s\n"
            "Is the cluster running, and is the kubeconfig's server address right?\n",
            cfg->server, cfg->source, err->msg);
  else if (rc == VG_K8S_EUNAUTHORIZED)
    fprintf(stderr,
            PROG
            ": the API server %s refused the credentials from %s (inspect needs "
            "list on nodes and pods): %s\n",
            cfg->server, cfg->source, err->msg);
  else
    fprintf(stderr, PROG ": reading the cluster from %s failed: %s\n", cfg->server, err->msg);
  return 1;
}

static int gather(struct vg_k8s_client *c, const struct opts *o, struct ins_cluster *cl,
                  struct vg_err *err) {
  json_object *nodes = NULL, *pods = NULL;
  int rc = ins_fetch(c, o->node, &nodes, &pods, err);
  if (rc != 0) return rc;
  rc = ins_nodes_from_list(nodes, o->node, cl, err);
  if (rc == 0) rc = ins_pods_from_list(pods, cl, err);
  json_object_put(nodes);
  json_object_put(pods);
  return rc;
}

static int render(const struct opts *o, const struct ins_cluster *cl, struct vg_err *err) {
  if (o->format == INS_JSON) return ins_render_json(cl, stdout, err);
  if (cl->nnodes == 0) {
    fputs(
        "No GPU nodes: no node carries the vgpu.io/gpu-inventory annotation "
        "(is vgpu-device-plugin running?)\n",
        stdout);
    return 0;
  }
  if (o->format == INS_WIDE) return ins_render_wide(cl, o->detail, stdout, err);
  return ins_render_aliyun(cl, o->detail, stdout, err);
}

static int inspect(const struct opts *o, const struct vg_k8s_config *cfg) {
  struct vg_err err = {""};
  struct ins_cluster cl = {.names = &o->names};
  struct vg_k8s_client *c = vg_k8s_client_new(cfg, &err);
  if (c == NULL) {
    fprintf(stderr, PROG ": %s\n", err.msg);
    return 1;
  }
  vg_k8s_client_set_timeouts(c, 20000, 5000);
  int rc = gather(c, o, &cl, &err);
  vg_k8s_client_free(c);
  if (rc != 0) return api_failure(rc, cfg, &err);
  if (o->node != NULL && cl.nnodes == 0) {
    fprintf(stderr,
            PROG
            ": node %s not found, or it has no vgpu.io/gpu-inventory annotation "
            "(is vgpu-device-plugin running there?)\n",
            o->node);
    ins_cluster_free(&cl);
    return 1;
  }
  ins_compute(&cl);
  for (int i = 0; i < cl.nwarn; i++) fprintf(stderr, "warning: %s\n", cl.warn[i]);
  rc = render(o, &cl, &err);
  ins_cluster_free(&cl);
  if (rc != 0) fprintf(stderr, PROG ": %s\n", err.msg);
  return rc != 0 ? 1 : 0;
}

int main(int argc, char **argv) {
  static struct opts o; /* names: 3 KiB, off the stack */
  vg_resource_names_default(&o.names);
  int rc = parse_args(argc, argv, &o);
  if (rc != 0) return rc == 1 ? 0 : rc;
  struct vg_k8s_config cfg = {0};
  struct vg_err err = {""};
  if (vg_k8s_config_kubectl(&cfg, o.kubeconfig, &err) != 0) {
    fprintf(stderr, PROG ": %s\n", err.msg);
    vg_k8s_config_free(&cfg);
    return 1;
  }
  rc = inspect(&o, &cfg);
  vg_k8s_config_free(&cfg);
  return rc;
}

/*
 * main.c -- vgpu-device-plugin: discovers the node's GPUs through NVML,
 * advertises <slots> device IDs per GPU (<GPU-UUID>::<slot>) for one resource,
 * and stays registered with the kubelet (docs/allocation.md).
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "devices.h"
#include "plugin.h"
#include "registration.h"

#define DEFAULT_PLUGIN_DIR "/var/lib/kubelet/device-plugins"
#define DEFAULT_STATE_DIR "/var/lib/vgpu"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: vgpu-device-plugin --config FILE [--node-name NAME] [--kubeconfig FILE]\n"
      "                          [--plugin-dir DIR] [--kubelet-socket PATH]\n"
      "                          [--metrics ADDR:PORT] [--slots N] [--state-dir DIR]\n"
      "                          [--library PATH] [--resource NAME]\n"
      "  --plugin-dir      where our socket is served (default " DEFAULT_PLUGIN_DIR
      ")\n"
      "  --kubelet-socket  the kubelet's Registration socket (default <plugin-dir>/kubelet.sock;\n"
      "                    empty: serve without registering)\n"
      "  --slots N         device IDs advertised per GPU (default 4)\n"
      "  --state-dir DIR   host directory for per-container slot directories "
      "(default " DEFAULT_STATE_DIR
      ")\n"
      "  --library PATH    host path of libvgpu.so (default " VG_DEFAULT_LIBRARY
      ")\n"
      "  --resource NAME   extended resource name (default nvidia.com/gpu)\n");
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                           {"node-name", required_argument, NULL, 'n'},
                                           {"kubeconfig", required_argument, NULL, 'k'},
                                           {"plugin-dir", required_argument, NULL, 'p'},
                                           {"kubelet-socket", required_argument, NULL, 's'},
                                           {"metrics", required_argument, NULL, 'm'},
                                           {"slots", required_argument, NULL, 'S'},
                                           {"state-dir", required_argument, NULL, 'd'},
                                           {"library", required_argument, NULL, 'l'},
                                           {"resource", required_argument, NULL, 'r'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *config = NULL, *plugin_dir = DEFAULT_PLUGIN_DIR, *kubelet_socket = NULL;
  const char *metrics = NULL, *kubeconfig = NULL;
  struct vg_plugin_opts opts = {.resource = "nvidia.com/gpu",
                                .slots = 4,
                                .state_dir = DEFAULT_STATE_DIR,
                                .library = VG_DEFAULT_LIBRARY};
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
      case 'c':
        config = optarg;
        break;
      case 'n':
        break; /* used once the Node inventory is published */
      case 'k':
        kubeconfig = optarg;
        break;
      case 'p':
        plugin_dir = optarg;
        break;
      case 's':
        kubelet_socket = optarg;
        break;
      case 'm':
        metrics = optarg;
        break;
      case 'd':
        opts.state_dir = optarg;
        break;
      case 'l':
        opts.library = optarg;
        break;
      case 'r':
        opts.resource = optarg;
        break;
      case 'S': {
        char *end;
        long v = strtol(optarg, &end, 10);
        if (*optarg == '\0' || *end != '\0' || v < 1 || v > 1024) {
          fprintf(stderr, "vgpu-device-plugin: --slots: \"%s\" is not a number from 1 to 1024\n",
                  optarg);
          return 2;
        }
        opts.slots = (unsigned)v;
        break;
      }
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "vgpu-device-plugin: unexpected argument \"%s\"\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  if (config != NULL)
    vg_plog("--config %s: dialect configuration is not wired yet; advertising %s", config,
            opts.resource);
  if (kubeconfig != NULL)
    vg_plog("--kubeconfig %s: the Kubernetes client is not wired yet", kubeconfig);
  if (metrics != NULL) vg_plog("--metrics %s: metrics are not served yet", metrics);
  char default_socket[PATH_MAX];
  if (kubelet_socket == NULL) {
    snprintf(default_socket, sizeof(default_socket), "%s/kubelet.sock", plugin_dir);
    kubelet_socket = default_socket;
  }

  /* Signals arrive on a signalfd; blocked before any thread exists. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sigfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sigfd < 0) {
    perror("vgpu-device-plugin: signalfd");
    return 1;
  }

  static struct vg_gpu gpus[VG_MAX_GPUS];
  unsigned ngpus = 0;
  char err[512];
  if (vg_gpus_discover(gpus, &ngpus, err, sizeof(err)) != 0) {
    vg_plog("GPU discovery: %s; advertising no devices", err);
    ngpus = 0;
  }
  for (unsigned i = 0; i < ngpus; i++)
    vg_plog("GPU %u: %s %s, %llu MiB", gpus[i].index, gpus[i].uuid, gpus[i].name,
            (unsigned long long)(gpus[i].memory >> 20));

  char endpoint[256];
  snprintf(endpoint, sizeof(endpoint), "vgpu-%s.sock", opts.resource);
  for (char *q = endpoint; *q != '\0'; q++)
    if (*q == '/') *q = '_';

  static struct vg_plugin plugin;
  vg_plugin_init(&plugin, &opts, gpus, ngpus);
  struct vg_reg_opts ro = {
      .plugin_dir = plugin_dir, .kubelet_socket = kubelet_socket, .endpoint = endpoint};
  int rc = vg_registration_run(&plugin, &ro, sigfd);
  vg_plugin_destroy(&plugin);
  close(sigfd);
  return rc;
}

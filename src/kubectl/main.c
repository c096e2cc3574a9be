/*
 * main.c -- kubectl-vgpu: which verb, and the program's own --help and
 * --version.
 *
 * kubectl finds this program on $PATH by its name and runs it for
 * `kubectl vgpu ...`, passing the words after "vgpu" unchanged; so argv[1]
 * is the verb and each verb parses the rest itself.
 */
#include <stdio.h>
#include <string.h>

#include "kubectl_vgpu.h"
#include "opt.h"

static void usage(FILE *to) {
  fputs(
      "usage: kubectl vgpu resize POD [-n NAMESPACE] [-c CONTAINER] [--memory SIZE]\n"
      "                           [--cores PCT] [--timeout SECONDS] [--no-wait]\n"
      "                           [--kubeconfig FILE] [-o json]\n"
      "       kubectl vgpu --help | --version\n"
      "\n"
      "GPU sharing with vgpu (docs/kubectl-vgpu.md).\n"
      "\n"
      "commands:\n"
      "  resize   change the GPU memory and/or compute share per GPU of a running\n"
      "           container placed by vgpu-scheduler (kubectl vgpu resize --help)\n"
      "\n"
      "Exit status: 0 done, 1 refused or failed, 2 timed out, 64 bad usage.\n",
      to);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return KV_EXIT_USAGE;
  }
  const char *verb = argv[1];
  if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "help") == 0) {
    usage(stdout);
    return KV_EXIT_OK;
  }
  if (strcmp(verb, "--version") == 0 || strcmp(verb, "version") == 0) {
    printf(KV_PROG " %s\n", VG_VERSION);
    return KV_EXIT_OK;
  }
  if (strcmp(verb, "resize") == 0) return kv_resize_main(argc - 1, argv + 1);
  static const char *const options[] = {"--help", "--version", NULL};
  static const char *const verbs[] = {"resize", "help", "version", NULL};
  const char *near = vg_opt_suggest(verb, verb[0] == '-' ? options : verbs);
  const char *kind = verb[0] == '-' ? "option" : "command";
  if (near != NULL)
    fprintf(stderr, KV_PROG ": unknown %s '%s' (did you mean %s?)\n", kind, verb, near);
  else
    fprintf(stderr, KV_PROG ": unknown %s '%s' (see " KV_PROG " --help)\n", kind, verb);
  return KV_EXIT_USAGE; /* one line, as every program answers a mistyped option */
}

/* main.c -- vgpu: dispatch to one verb. Invoked as nvidia-smi (a symlink,
 * or a bind mount of that name where NVIDIA's container toolkit would mount
 * the real one -- the e2e's simulated driver does so), it is `vgpu smi`. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opt.h"

/* Which region status and set use without --cache (runs.c). */
#define REGION_RULE                                                                          \
  ".\n        Without --cache: $CUDA_DEVICE_MEMORY_SHARED_CACHE if set; else the region of " \
  "the one\n        vgpu run still running (several: refused, listing them); else "          \
  "/tmp/vgpu.cache"

/* Each verb's synopsis and what it does: the global usage lists them all,
 * `vgpu VERB --help` shows its own. */
static const struct verb_help {
  const char *name, *synopsis, *what;
} VERBS[] = {
    {"run",
     "[--sim] [--memory SIZE] [--cores PCT] [--devices LIST] [--cache PATH] [-q] -- CMD ARGS...",
     "run CMD with libvgpu preloaded and these limits (--sim: on the simulated GPU); the limits\n"
     "        are printed on stderr first (-q, --quiet: not). Without --cache (or\n"
     "        $CUDA_DEVICE_MEMORY_SHARED_CACHE) the run gets a region file of its own, removed\n"
     "        when CMD exits, so its limits do not carry over to the next run"},
    {"status", "[--cache PATH] [--json] [--sim]",
     "limits, usage and processes of a region file" REGION_RULE},
    {"set", "[--cache PATH] [--memory SIZE] [--cores PCT] [--device N]",
     "change the limits of running processes" REGION_RULE},
    {"smi", "[--sim]",
     "nvidia-smi's table of the GPUs and processes this process sees (the container's\n"
     "        slice under libvgpu); what NVML cannot say reads N/A. Invoked as nvidia-smi, vgpu\n"
     "        is vgpu smi"},
};

static const char NOTES[] =
    "SIZE: bytes, or with k/m/g/t (binary, 300m = 300 MiB), Ki/Mi/Gi/Ti, KB/MB/GB/TB; 1.5g ok\n"
    "PCT: 0..100 (0 = unlimited). Region files: vgpu run makes one per run in\n"
    "$XDG_RUNTIME_DIR/vgpu-runs (else ${TMPDIR:-/tmp}/vgpu-runs-UID) unless --cache or\n"
    "$CUDA_DEVICE_MEMORY_SHARED_CACHE names one to share.\n";

static void usage(FILE *to) {
  fputs("usage: vgpu <command> [options]\n       vgpu --version\n\ncommands:\n", to);
  for (size_t i = 0; i < sizeof(VERBS) / sizeof(VERBS[0]); i++)
    fprintf(to, "  %s %s\n        %s\n", VERBS[i].name, VERBS[i].synopsis, VERBS[i].what);
  fprintf(to, "\n%s", NOTES);
}

/* `vgpu VERB ... -h|--help ...` (before any "--"): that verb's usage on
 * stdout; false when the arguments ask for no help. */
static bool verb_help(int argc, char **argv) {
  for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "-h") != 0 && strcmp(argv[i], "--help") != 0) continue;
    for (size_t v = 0; v < sizeof(VERBS) / sizeof(VERBS[0]); v++)
      if (strcmp(VERBS[v].name, argv[1]) == 0) {
        /* The SIZE/PCT and region-file notes only where the verb takes them. */
        bool notes = strstr(VERBS[v].synopsis, "--cache") != NULL;
        printf("usage: vgpu %s %s\n        %s\n%s%s", VERBS[v].name, VERBS[v].synopsis,
               VERBS[v].what, notes ? "\n" : "", notes ? NOTES : "");
        return true;
      }
  }
  return false;
}

/* An unknown verb or top-level option, with a guess at what was meant. */
static void unknown_verb(const char *verb) {
  static const char *const options[] = {"--help", "--version", NULL};
  static const char *const verbs[] = {"run", "status", "set", "smi", NULL};
  if (verb[0] == '-') {
    vg_opt_unknown("vgpu", verb, options);
    return;
  }
  const char *near = vg_opt_suggest(verb, verbs);
  if (near != NULL)
    fprintf(stderr, "vgpu: unknown command '%s' (did you mean %s?)\n", verb, near);
  else
    fprintf(stderr, "vgpu: unknown command '%s'\n", verb);
}

static bool called_nvidia_smi(const char *argv0) {
  const char *base = strrchr(argv0, '/');
  return strcmp(base != NULL ? base + 1 : argv0, "nvidia-smi") == 0;
}

int main(int argc, char **argv) {
  if (argc > 0 && called_nvidia_smi(argv[0])) return vg_cmd_smi(argc, argv);
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("vgpu %s\n", VG_VERSION);
    return 0;
  }
  const char *verb = argv[1];
  if (verb_help(argc, argv)) return 0;
  if (strcmp(verb, "run") == 0) return vg_cmd_run(argc - 1, argv + 1);
  if (strcmp(verb, "status") == 0) return vg_cmd_status(argc - 1, argv + 1);
  if (strcmp(verb, "set") == 0) return vg_cmd_set(argc - 1, argv + 1);
  if (strcmp(verb, "smi") == 0) return vg_cmd_smi(argc - 1, argv + 1);
  unknown_verb(verb); /* one line, as every program answers a mistyped option */
  return 2;
}

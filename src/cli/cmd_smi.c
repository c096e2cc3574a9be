/*
 * cmd_smi.c -- vgpu smi: the GPUs as NVML shows them to this process, in
 * nvidia-smi's classic layout (the one Huawei CCE's documentation shows
 * in a pod, seed 004), so that what a tenant sees can be compared with it
 * line by line. Under `vgpu run` (or inside a vgpu container) the memory
 * column is the container's slice and the Processes table its own
 * processes, as with nvidia-smi itself under libvgpu; on a machine without
 * nvidia-smi (the simulator) this is how to look, and invoked as
 * `nvidia-smi` (main.c) it stands in for it.
 *
 * What NVML cannot say here -- fan, temperature, performance state, power,
 * persistence mode, ECC, compute and MIG mode, which vgpu's ABI subset does
 * not speak -- reads N/A, as nvidia-smi prints an unsupported field. The
 * optional functions (CUDA version, utilisation, processes) are looked up
 * one by one, so a driver without one loses a field, not the table.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "nvml_abi.h"

struct nvml {
  __typeof__(nvmlInit_v2) *init;
  __typeof__(nvmlShutdown) *shutdown;
  __typeof__(nvmlDeviceGetCount_v2) *count;
  __typeof__(nvmlDeviceGetHandleByIndex_v2) *handle;
  __typeof__(nvmlDeviceGetName) *name;
  __typeof__(nvmlDeviceGetPciInfo_v3) *pci;
  __typeof__(nvmlDeviceGetMemoryInfo) *memory;
  __typeof__(nvmlSystemGetDriverVersion) *driver;
  /* Optional: NULL reads N/A. */
  __typeof__(nvmlSystemGetCudaDriverVersion) *cuda;
  __typeof__(nvmlDeviceGetUtilizationRates) *util;
  __typeof__(nvmlDeviceGetComputeRunningProcesses_v3) *procs; /* _v3, else _v2 */
  __typeof__(nvmlDeviceGetComputeRunningProcesses) *procs_v1; /* when neither */
};

#define SYM(lib, field, name) ((field) = (__typeof__(field))dlsym((lib), (name)))

/* NVML from path (the simulator's with --sim), else the loader's
 * libnvidia-ml.so.1: the driver's, or libvgpu's view of it. */
static int load(struct nvml *n, const char *path) {
  void *lib = dlopen(path != NULL ? path : "libnvidia-ml.so.1", RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "vgpu smi: no NVIDIA driver found (cannot load %s: %s)%s\n",
            path != NULL ? path : "libnvidia-ml.so.1", dlerror(),
            path != NULL ? "" : "; on a machine without a GPU, use vgpu smi --sim");
    return -1;
  }
  SYM(lib, n->init, "nvmlInit_v2");
  SYM(lib, n->shutdown, "nvmlShutdown");
  SYM(lib, n->count, "nvmlDeviceGetCount_v2");
  SYM(lib, n->handle, "nvmlDeviceGetHandleByIndex_v2");
  SYM(lib, n->name, "nvmlDeviceGetName");
  SYM(lib, n->pci, "nvmlDeviceGetPciInfo_v3");
  SYM(lib, n->memory, "nvmlDeviceGetMemoryInfo");
  SYM(lib, n->driver, "nvmlSystemGetDriverVersion");
  SYM(lib, n->cuda, "nvmlSystemGetCudaDriverVersion");
  SYM(lib, n->util, "nvmlDeviceGetUtilizationRates");
  if (SYM(lib, n->procs, "nvmlDeviceGetComputeRunningProcesses_v3") == NULL)
    SYM(lib, n->procs, "nvmlDeviceGetComputeRunningProcesses_v2");
  SYM(lib, n->procs_v1, "nvmlDeviceGetComputeRunningProcesses");
  if (!n->init || !n->shutdown || !n->count || !n->handle || !n->name || !n->pci || !n->memory ||
      !n->driver) {
    fprintf(stderr, "vgpu smi: libnvidia-ml.so.1 lacks a needed function\n");
    return -1;
  }
  return 0;
}

static const char *const RULE =
    "+-----------------------------------------------------------------------------+";
static const char *const SPLIT =
    "+-------------------------------+----------------------+----------------------+";
#define WIDTH 79

/* "Wed Apr 12 07:54:59 2023", as nvidia-smi's first line. */
static void print_date(void) {
  char buf[64];
  time_t now = time(NULL);
  struct tm tm;
  if (localtime_r(&now, &tm) == NULL ||
      strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm) == 0)
    return;
  printf("%s\n", buf);
}

/* "%-13s" as nvidia-smi pads a version, but never fewer than 3 spaces. */
static size_t put_version(char *out, size_t len, const char *v) {
  size_t n = strlen(v);
  int pad = n + 3 > 13 ? 3 : (int)(13 - n);
  int w = snprintf(out, len, "%s%*s", v, pad, "");
  return w < 0 ? 0 : (size_t)w;
}

static void print_versions(const struct nvml *n) {
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "N/A", cuda[16] = "N/A";
  int cv = 0;
  if (n->driver(driver, sizeof(driver)) != NVML_SUCCESS) snprintf(driver, sizeof(driver), "N/A");
  if (n->cuda != NULL && n->cuda(&cv) == NVML_SUCCESS)
    snprintf(cuda, sizeof(cuda), "%d.%d", cv / 1000, cv % 1000 / 10);
  char line[256];
  size_t at = (size_t)snprintf(line, sizeof(line), "| NVIDIA-SMI ");
  at += put_version(line + at, sizeof(line) - at, driver);
  at += (size_t)snprintf(line + at, sizeof(line) - at, "Driver Version: ");
  at += put_version(line + at, sizeof(line) - at, driver);
  snprintf(line + at, sizeof(line) - at, "CUDA Version: %s", cuda);
  /* A version too long for the box pushes the border out, as nvidia-smi's. */
  printf("%s\n%-*s%s|\n", RULE, WIDTH - 1, line, strlen(line) >= WIDTH - 1 ? " " : "");
}

static void print_header(void) {
  printf(
      "|-------------------------------+----------------------+----------------------+\n"
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
      "|                               |                      |               MIG M. |\n"
      "|===============================+======================+======================|\n");
}

/* nvidia-smi's 18 columns for the name: a longer one is cut to 15 + "...". */
static void short_name(const char *name, char *out, size_t len) {
  if (strlen(name) <= 18)
    snprintf(out, len, "%s", name);
  else
    snprintf(out, len, "%.15s...", name);
}

static void print_device(const struct nvml *n, unsigned i, nvmlDevice_t dev) {
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "N/A", shown[24];
  nvmlPciInfo_t pci = {.busId = "N/A"};
  nvmlMemory_t mem = {0};
  nvmlUtilization_t u = {0};
  char usage[48] = "N/A", util[16] = "N/A";
  if (n->name(dev, name, sizeof(name)) != NVML_SUCCESS) snprintf(name, sizeof(name), "N/A");
  if (n->pci(dev, &pci) != NVML_SUCCESS) snprintf(pci.busId, sizeof(pci.busId), "N/A");
  if (n->memory(dev, &mem) == NVML_SUCCESS)
    snprintf(usage, sizeof(usage), "%5lluMiB / %5lluMiB", mem.used >> 20, mem.total >> 20);
  if (n->util != NULL && n->util(dev, &u) == NVML_SUCCESS)
    snprintf(util, sizeof(util), "%3u%%", u.gpu);
  short_name(name, shown, sizeof(shown));
  printf("|%4u  %-18s  %3s  | %-16.16s %3s | %20s |\n", i, shown, "N/A", pci.busId, "N/A", "N/A");
  printf("| %3s%6s%6s%7s / %4s | %20s |%8s%13s |\n", "N/A", "N/A", "N/A", "N/A", "N/A", usage, util,
         "N/A");
  printf("|%31s|%22s| %20s |\n%s\n", "", "", "N/A", SPLIT);
}

/* One process as the Processes table shows it. */
struct proc {
  unsigned gpu;
  unsigned pid;
  unsigned long long used; /* bytes; ~0: not available */
};

struct procs {
  unsigned n, cap;
  struct proc *p;
};

static int add_proc(struct procs *ps, unsigned gpu, unsigned pid, unsigned long long used) {
  if (ps->n == ps->cap) {
    unsigned cap = ps->cap ? 2 * ps->cap : 16;
    struct proc *p = realloc(ps->p, cap * sizeof(*p));
    if (p == NULL) return -1;
    ps->p = p;
    ps->cap = cap;
  }
  ps->p[ps->n++] = (struct proc){gpu, pid, used};
  return 0;
}

typedef nvmlReturn_t (*list_fn)(const struct nvml *, nvmlDevice_t, unsigned *, void *);

static nvmlReturn_t list_v3(const struct nvml *n, nvmlDevice_t dev, unsigned *count, void *buf) {
  return n->procs(dev, count, buf);
}

static nvmlReturn_t list_v1(const struct nvml *n, nvmlDevice_t dev, unsigned *count, void *buf) {
  return n->procs_v1(dev, count, buf);
}

/* Calls list with buffers of elem bytes until one is big enough (NVML's
 * size protocol). Returns the buffer (free it) with *count, or NULL. */
static void *listing(const struct nvml *n, list_fn list, nvmlDevice_t dev, size_t elem,
                     unsigned *count) {
  unsigned cap = 32;
  for (int tries = 0; tries < 4; tries++) {
    void *buf = calloc(cap, elem);
    if (buf == NULL) return NULL;
    *count = cap;
    nvmlReturn_t rc = list(n, dev, count, buf);
    if (rc == NVML_SUCCESS) return buf;
    free(buf);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) return NULL;
    cap = *count + 8; /* processes may start meanwhile */
  }
  return NULL;
}

/* GPU gpu's compute processes into ps, through _v3/_v2, else v1. */
static void collect_procs(const struct nvml *n, unsigned gpu, nvmlDevice_t dev, struct procs *ps) {
  unsigned count = 0;
  if (n->procs != NULL) {
    nvmlProcessInfo_t *p = listing(n, list_v3, dev, sizeof(*p), &count);
    for (unsigned i = 0; p != NULL && i < count; i++)
      add_proc(ps, gpu, p[i].pid, p[i].usedGpuMemory);
    free(p);
  } else if (n->procs_v1 != NULL) {
    nvmlProcessInfo_v1_t *p = listing(n, list_v1, dev, sizeof(*p), &count);
    for (unsigned i = 0; p != NULL && i < count; i++)
      add_proc(ps, gpu, p[i].pid, p[i].usedGpuMemory);
    free(p);
  }
}

/* The first NUL-terminated string of /proc/PID/<file>, without a newline. */
static int read_proc(unsigned pid, const char *file, char *out, size_t len) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%u/%s", pid, file);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t got = fread(out, 1, len - 1, f);
  fclose(f);
  out[got] = '\0';
  out[strcspn(out, "\n")] = '\0';
  return out[0] != '\0' ? 0 : -1;
}

/* The process's name from /proc/PID/comm, else its command line; a name
 * too long for the column keeps its end, after "...", as nvidia-smi does. */
static void process_name(unsigned pid, char *out, size_t len) {
  char name[256];
  if (read_proc(pid, "comm", name, sizeof(name)) != 0 &&
      read_proc(pid, "cmdline", name, sizeof(name)) != 0)
    snprintf(name, sizeof(name), "N/A");
  size_t n = strlen(name);
  if (n > 31)
    snprintf(out, len, "...%s", name + n - 28);
  else
    snprintf(out, len, "%s", name);
}

static void print_proc(const struct proc *p) {
  char name[40], mem[32] = "N/A";
  process_name(p->pid, name, sizeof(name));
  if (p->used != ~0ULL) snprintf(mem, sizeof(mem), "%lluMiB", p->used >> 20);
  printf("|%5u%6s%5s%10u%7s   %-31s%9s |\n", p->gpu, "N/A", "N/A", p->pid, "C", name, mem);
}

static void print_procs(const struct procs *ps) {
  printf(
      "\n%s\n"
      "| Processes:                                                                  |\n"
      "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
      "|        ID   ID                                                   Usage      |\n"
      "|=============================================================================|\n",
      RULE);
  if (ps->n == 0)
    printf("|  No running processes found                                                 |\n");
  for (unsigned i = 0; i < ps->n; i++) print_proc(&ps->p[i]);
  printf("%s\n", RULE);
}

static int print_all(const struct nvml *n, unsigned count) {
  struct procs ps = {0};
  print_date();
  print_versions(n);
  print_header();
  for (unsigned i = 0; i < count; i++) {
    nvmlDevice_t dev;
    if (n->handle(i, &dev) != NVML_SUCCESS) continue;
    print_device(n, i, dev);
    collect_procs(n, i, dev, &ps);
  }
  print_procs(&ps);
  free(ps.p);
  return 0;
}

/* The simulator's NVML for --sim (NULL path: the loader's); -1 with the
 * reason printed when there is no simulator. */
static int nvml_path(int sim, char *lib, size_t len, const char **path) {
  *path = NULL;
  if (!sim) return 0;
  if (vg_path_sim_nvml(lib, len) != 0) {
    fputs("vgpu smi: --sim: no simulator found (set VGPU_SIM_DIR)\n", stderr);
    return -1;
  }
  *path = lib;
  return 0;
}

int vg_cmd_smi(int argc, char **argv) {
  int sim = argc > 1 && strcmp(argv[1], "--sim") == 0;
  if (argc > 1 + sim) {
    fprintf(stderr, "vgpu smi: only the default table is supported (no '%s'; vgpu smi [--sim])\n",
            argv[1 + sim]);
    return 2;
  }
  char lib[4200];
  const char *path;
  struct nvml n;
  if (nvml_path(sim, lib, sizeof(lib), &path) != 0 || load(&n, path) != 0) return 1;
  nvmlReturn_t rc = n.init();
  unsigned count = 0;
  if (rc != NVML_SUCCESS || (rc = n.count(&count)) != NVML_SUCCESS) {
    fprintf(stderr, "vgpu smi: NVML initialisation failed (error %d)\n", (int)rc);
    return 1;
  }
  int ret = 0;
  if (count == 0) {
    printf("No devices were found\n");
    ret = 6; /* as nvidia-smi */
  } else {
    ret = print_all(&n, count);
  }
  n.shutdown();
  return ret;
}

/*
 * cmd_smi.c -- vgpu smi: the GPUs as NVML shows them to this process, in
 * nvidia-smi's layout. Under `vgpu run` (or inside a vgpu container) the
 * memory column is the container's slice, as with nvidia-smi itself; on a
 * machine without nvidia-smi (the simulator) this is how to look.
 */
#include <dlfcn.h>
#include <stdio.h>

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
};

static int load(struct nvml *n) {
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "vgpu smi: cannot load libnvidia-ml.so.1: %s\n", dlerror());
    return -1;
  }
  n->init = (__typeof__(n->init))dlsym(lib, "nvmlInit_v2");
  n->shutdown = (__typeof__(n->shutdown))dlsym(lib, "nvmlShutdown");
  n->count = (__typeof__(n->count))dlsym(lib, "nvmlDeviceGetCount_v2");
  n->handle = (__typeof__(n->handle))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  n->name = (__typeof__(n->name))dlsym(lib, "nvmlDeviceGetName");
  n->pci = (__typeof__(n->pci))dlsym(lib, "nvmlDeviceGetPciInfo_v3");
  n->memory = (__typeof__(n->memory))dlsym(lib, "nvmlDeviceGetMemoryInfo");
  n->driver = (__typeof__(n->driver))dlsym(lib, "nvmlSystemGetDriverVersion");
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

static void print_device(const struct nvml *n, unsigned i) {
  nvmlDevice_t dev;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "?";
  nvmlPciInfo_t pci = {.busId = "?"};
  nvmlMemory_t mem = {0};
  if (n->handle(i, &dev) != NVML_SUCCESS) return;
  n->name(dev, name, sizeof(name));
  n->pci(dev, &pci);
  n->memory(dev, &mem);
  char usage[48];
  snprintf(usage, sizeof(usage), "%lluMiB / %6lluMiB", mem.used >> 20, mem.total >> 20);
  printf("| %3u  %-24.24s | %-20.20s | %20s |\n", i, name, pci.busId, usage);
}

int vg_cmd_smi(int argc, char **argv) {
  (void)argc;
  (void)argv;
  struct nvml n;
  if (load(&n) != 0) return 1;
  nvmlReturn_t rc = n.init();
  unsigned count = 0;
  if (rc != NVML_SUCCESS || n.count(&count) != NVML_SUCCESS) {
    fprintf(stderr, "vgpu smi: NVML initialisation failed (error %d)\n", (int)rc);
    return 1;
  }
  char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "?";
  n.driver(driver, sizeof(driver));
  printf("%s\n| VGPU-SMI                  Driver Version: %-34.34s|\n", RULE, driver);
  printf("%s\n| GPU  Name                     | Bus-Id               |         Memory-Usage |\n",
         SPLIT);
  printf("|===============================+======================+======================|\n");
  for (unsigned i = 0; i < count; i++) print_device(&n, i);
  printf("%s\n", SPLIT);
  n.shutdown();
  return 0;
}

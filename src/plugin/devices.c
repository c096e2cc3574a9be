/* devices.c -- see devices.h. */
#include "devices.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "nvml_abi.h"

/* Not in every driver (nor in nvml_abi.h): looked up with dlsym. */
typedef nvmlReturn_t (*numa_node_fn)(nvmlDevice_t device, unsigned int *node);

int vg_gpus_discover(struct vg_gpu *gpus, unsigned *count, char *err, size_t err_len) {
  *count = 0;
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(err, err_len, "cannot load libnvidia-ml.so.1: %s", dlerror());
    return -1;
  }
  __typeof__(nvmlInit_v2) *init = (__typeof__(init))dlsym(lib, "nvmlInit_v2");
  __typeof__(nvmlDeviceGetCount_v2) *get_count =
      (__typeof__(get_count))dlsym(lib, "nvmlDeviceGetCount_v2");
  __typeof__(nvmlDeviceGetHandleByIndex_v2) *handle =
      (__typeof__(handle))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  __typeof__(nvmlDeviceGetUUID) *get_uuid = (__typeof__(get_uuid))dlsym(lib, "nvmlDeviceGetUUID");
  __typeof__(nvmlDeviceGetName) *get_name = (__typeof__(get_name))dlsym(lib, "nvmlDeviceGetName");
  __typeof__(nvmlDeviceGetMemoryInfo) *get_mem =
      (__typeof__(get_mem))dlsym(lib, "nvmlDeviceGetMemoryInfo");
  __typeof__(nvmlDeviceGetMinorNumber) *get_minor =
      (__typeof__(get_minor))dlsym(lib, "nvmlDeviceGetMinorNumber");
  numa_node_fn get_numa = (numa_node_fn)dlsym(lib, "nvmlDeviceGetNumaNodeId");
  if (!init || !get_count || !handle || !get_uuid || !get_name || !get_mem) {
    snprintf(err, err_len, "libnvidia-ml.so.1 lacks a needed NVML function");
    dlclose(lib);
    return -1;
  }
  nvmlReturn_t rc = init();
  unsigned n = 0;
  if (rc != NVML_SUCCESS || (rc = get_count(&n)) != NVML_SUCCESS) {
    snprintf(err, err_len, "NVML initialisation failed (error %d)", (int)rc);
    dlclose(lib);
    return -1;
  }
  if (n > VG_MAX_GPUS) n = VG_MAX_GPUS;
  for (unsigned i = 0; i < n; i++) {
    struct vg_gpu *g = &gpus[*count];
    memset(g, 0, sizeof(*g));
    g->index = i;
    g->numa_node = -1;
    g->minor = -1;
    nvmlDevice_t dev;
    if (handle(i, &dev) != NVML_SUCCESS ||
        get_uuid(dev, g->uuid, sizeof(g->uuid)) != NVML_SUCCESS) {
      snprintf(err, err_len, "NVML: cannot read GPU %u", i);
      dlclose(lib);
      return -1;
    }
    if (get_name(dev, g->name, sizeof(g->name)) != NVML_SUCCESS)
      snprintf(g->name, sizeof(g->name), "?");
    nvmlMemory_t mem = {0};
    if (get_mem(dev, &mem) == NVML_SUCCESS) g->memory = mem.total;
    unsigned minor = 0;
    if (get_minor != NULL && get_minor(dev, &minor) == NVML_SUCCESS) g->minor = (int)minor;
    unsigned node = 0;
    if (get_numa != NULL && get_numa(dev, &node) == NVML_SUCCESS && node < 1024)
      g->numa_node = (int)node;
    g->healthy = true;
    (*count)++;
  }
  /* NVML stays loaded and initialised: health checks will use it. */
  return 0;
}

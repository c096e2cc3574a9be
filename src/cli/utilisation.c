/*
 * utilisation.c -- what NVML measured a region's processes using, for
 * vgpu status.
 *
 * The region knows which processes belong to the container (its slots) but
 * not how busy they keep the GPU: the limiter's own "charged" figure is an
 * estimate, and only exists when a limit is set. NVML measures it for every
 * process, limited or not. So, per device of the region, we ask NVML for the
 * per-process SM samples of the last few seconds
 * (nvmlDeviceGetProcessUtilization), average each PID's samples (a driver
 * may return several per process in the window), and sum the PIDs that are
 * live slots of the region. The device's total utilisation
 * (nvmlDeviceGetUtilizationRates) is shown beside it.
 *
 * libnvidia-ml.so.1 is opened at run time: a host or container without it
 * still gets limits and memory, with utilisation marked unavailable and the
 * reason -- never a 0 that was not measured.
 *
 * Why PIDs match: slots hold PIDs as the container's processes see them, and
 * `vgpu status` normally runs in that container, in the same PID namespace.
 * NVML reports PIDs in the namespace the driver sees, which is the caller's
 * on the simulator and with a host PID namespace, but the host's in an
 * ordinary container on a real GPU (docs/compute.md says the same of the
 * share policy). There no slot PID is found. That would read as an idle
 * container, so it is detected instead: when live slots hold memory on the
 * device (hence have a context there) but none of their PIDs is among NVML's
 * running processes, the utilisation is marked unavailable ("NVML's PIDs are
 * not this PID namespace's") rather than shown as 0.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define WINDOW_US 3000000ULL /* how far back samples are asked for */
#define FIRST_BUFFER 64      /* samples; grown once if NVML asks for more */

static const char *nvml_error(const struct vg_nvml *nv, nvmlReturn_t rc, char *buf, size_t len) {
  const char *s = nv->error_string ? nv->error_string(rc) : NULL;
  if (s != NULL)
    snprintf(buf, len, "%s (%d)", s, (int)rc);
  else
    snprintf(buf, len, "NVML error %d", (int)rc);
  return buf;
}

int vg_nvml_open(struct vg_nvml *nv, const char *library) {
  memset(nv, 0, sizeof(*nv));
  const char *name = library != NULL ? library : "libnvidia-ml.so.1";
  nv->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (nv->lib == NULL) {
    snprintf(nv->why, sizeof(nv->why), "cannot load %s: %s", name, dlerror());
    return -1;
  }
  nv->init = (__typeof__(nv->init))dlsym(nv->lib, "nvmlInit_v2");
  nv->shutdown = (__typeof__(nv->shutdown))dlsym(nv->lib, "nvmlShutdown");
  nv->error_string = (__typeof__(nv->error_string))dlsym(nv->lib, "nvmlErrorString");
  nv->by_uuid = (__typeof__(nv->by_uuid))dlsym(nv->lib, "nvmlDeviceGetHandleByUUID");
  nv->rates = (__typeof__(nv->rates))dlsym(nv->lib, "nvmlDeviceGetUtilizationRates");
  nv->samples = (__typeof__(nv->samples))dlsym(nv->lib, "nvmlDeviceGetProcessUtilization");
  nv->running = (__typeof__(nv->running))dlsym(nv->lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!nv->init || !nv->shutdown || !nv->by_uuid || !nv->samples) {
    snprintf(nv->why, sizeof(nv->why),
             "%s lacks nvmlInit_v2, nvmlDeviceGetHandleByUUID or "
             "nvmlDeviceGetProcessUtilization",
             name);
    dlclose(nv->lib);
    nv->lib = NULL;
    return -1;
  }
  nvmlReturn_t rc = nv->init();
  if (rc != NVML_SUCCESS) {
    char e[96];
    snprintf(nv->why, sizeof(nv->why), "nvmlInit_v2 failed: %s", nvml_error(nv, rc, e, sizeof(e)));
    dlclose(nv->lib);
    nv->lib = NULL;
    return -1;
  }
  nv->ready = 1;
  return 0;
}

void vg_nvml_close(struct vg_nvml *nv) {
  if (nv->ready) nv->shutdown();
  nv->ready = 0;
}

/* NVML's samples since WINDOW_US ago, in a malloc'd array (*out, *n); NULL
 * array with n = 0 when nothing ran. Returns the NVML result. */
static nvmlReturn_t read_samples(const struct vg_nvml *nv, nvmlDevice_t h,
                                 nvmlProcessUtilizationSample_t **out, unsigned *n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long now = (unsigned long long)ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
  unsigned long long since = now - WINDOW_US;
  unsigned cap = FIRST_BUFFER;
  *out = NULL;
  *n = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    nvmlProcessUtilizationSample_t *buf = calloc(cap, sizeof(*buf));
    if (buf == NULL) return NVML_ERROR_UNKNOWN;
    unsigned count = cap;
    nvmlReturn_t rc = nv->samples(h, buf, &count, since);
    if (rc == NVML_SUCCESS) {
      *out = buf;
      *n = count < cap ? count : cap;
      return rc;
    }
    free(buf);
    if (rc == NVML_ERROR_NOT_FOUND) return NVML_SUCCESS; /* no process ran: a measured 0 */
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE || count <= cap) return rc;
    cap = count + 16; /* processes may start between the calls */
  }
  return NVML_ERROR_INSUFFICIENT_SIZE;
}

/* The mean smUtil of pid's samples, or -1 if it has none. */
static double pid_mean(const nvmlProcessUtilizationSample_t *s, unsigned n, unsigned pid) {
  unsigned hits = 0;
  double sum = 0;
  for (unsigned i = 0; i < n; i++)
    if (s[i].pid == pid) {
      sum += s[i].smUtil;
      hits++;
    }
  return hits ? sum / hits : -1;
}

/* Whether NVML lists any of the live slots that hold memory on dev: false
 * means its PIDs are from another namespace. True when it cannot tell. */
static int pids_visible(const struct vg_nvml *nv, nvmlDevice_t h, const struct vg_shm *shm,
                        int dev) {
  const struct vg_region *r = vg_region_of(shm);
  int holders = 0;
  for (int i = 0; i < VG_MAX_PROCS; i++)
    if (r->proc[i].pid > 0 && r->proc[i].mem_used[dev] > 0 && vg_shm_slot_alive(shm, (unsigned)i))
      holders++;
  if (holders == 0 || nv->running == NULL) return 1;
  nvmlProcessInfo_t infos[256];
  unsigned count = 256;
  nvmlReturn_t rc = nv->running(h, &count, infos);
  if (rc != NVML_SUCCESS) return 1; /* too many to list, or unsupported: cannot tell */
  for (unsigned k = 0; k < count && k < 256; k++)
    for (int i = 0; i < VG_MAX_PROCS; i++)
      if (r->proc[i].pid > 0 && (unsigned)r->proc[i].pid == infos[k].pid &&
          r->proc[i].mem_used[dev] > 0 && vg_shm_slot_alive(shm, (unsigned)i))
        return 1;
  return 0;
}

void vg_util_measure(const struct vg_nvml *nv, const struct vg_shm *shm, int dev,
                     struct vg_util *u) {
  const struct vg_region *r = vg_region_of(shm);
  u->ok = 0;
  u->gpu_pct = -1;
  u->sm_pct = u->others_pct = 0;
  for (int i = 0; i < VG_MAX_PROCS; i++) u->slot_pct[i] = -1;
  if (!nv->ready) {
    snprintf(u->why, sizeof(u->why), "%s", nv->why);
    return;
  }
  char e[96];
  nvmlDevice_t h;
  nvmlReturn_t rc = nv->by_uuid(r->dev[dev].uuid, &h);
  if (rc != NVML_SUCCESS) {
    snprintf(u->why, sizeof(u->why), "NVML has no device %s: %s", r->dev[dev].uuid,
             nvml_error(nv, rc, e, sizeof(e)));
    return;
  }
  nvmlUtilization_t rates;
  if (nv->rates != NULL && nv->rates(h, &rates) == NVML_SUCCESS) u->gpu_pct = (int)rates.gpu;
  nvmlProcessUtilizationSample_t *s;
  unsigned n;
  rc = read_samples(nv, h, &s, &n);
  if (rc != NVML_SUCCESS) {
    snprintf(u->why, sizeof(u->why), "nvmlDeviceGetProcessUtilization failed: %s",
             nvml_error(nv, rc, e, sizeof(e)));
    return;
  }
  if (!pids_visible(nv, h, shm, dev)) {
    snprintf(u->why, sizeof(u->why),
             "NVML's PIDs are not this PID namespace's (run vgpu status inside the container)");
    free(s);
    return;
  }
  double all = 0;
  for (unsigned i = 0; i < n; i++) {
    int first = 1; /* count each PID once */
    for (unsigned j = 0; j < i && first; j++) first = s[j].pid != s[i].pid;
    if (first) all += pid_mean(s, n, s[i].pid);
  }
  for (int i = 0; i < VG_MAX_PROCS; i++) {
    if (r->proc[i].pid <= 0 || !vg_shm_slot_alive(shm, (unsigned)i)) continue;
    double m = pid_mean(s, n, (unsigned)r->proc[i].pid);
    u->slot_pct[i] = m < 0 ? 0 : m;
    u->sm_pct += u->slot_pct[i];
  }
  u->others_pct = all > u->sm_pct ? all - u->sm_pct : 0;
  free(s);
  u->ok = 1;
}

/*
 * driver.c -- finding the real libcuda.so.1 and libnvidia-ml.so.1.
 *
 * libvgpu is preloaded into programs that may never touch a GPU, so nothing
 * happens at load time (no constructor). The first hook that needs the
 * driver opens it by soname -- the same library the program already has --
 * and resolves every entry point we replace or call with the *real* dlsym,
 * never our own override. A program that reaches a hooked name through
 * dlsym or cuGetProcAddress is handed our function only when the pointer it
 * would have received is exactly the driver's export of that name, so a
 * lookup in any other library is left alone.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "interpose.h"
#include "log.h"

struct vg_real_cuda vg_cuda;
struct vg_real_nvml vg_nvml;

struct hook_entry {
  const char *name;
  void *hook;  /* our exported function */
  void **real; /* slot in vg_cuda/vg_nvml */
};

#define VG_ENTRY_CUDA(n) {#n, (void *)n, (void **)&vg_cuda.n},
#define VG_ENTRY_NVML(n) {#n, (void *)n, (void **)&vg_nvml.n},
static const struct hook_entry g_hooks[] = {VG_CUDA_HOOKS(VG_ENTRY_CUDA)
                                                VG_NVML_HOOKS(VG_ENTRY_NVML)};
#define VG_NHOOKS (sizeof(g_hooks) / sizeof(g_hooks[0]))

static void resolve(void *lib, const char *name, void **slot) { *slot = vg_real_dlsym(lib, name); }

static void *open_driver(const char *soname) {
  void *lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL) lib = dlopen(soname, RTLD_NOW);
  if (lib == NULL) vg_error("cannot load %s: %s", soname, dlerror());
  return lib;
}

static bool g_cuda_ok, g_nvml_ok; /* set (release) when a table is filled */

static void load_cuda(void) {
  void *lib = open_driver("libcuda.so.1");
  if (lib == NULL) return;
#define VG_RESOLVE_CUDA(n) resolve(lib, #n, (void **)&vg_cuda.n);
  VG_CUDA_HOOKS(VG_RESOLVE_CUDA)
  VG_CUDA_USED(VG_RESOLVE_CUDA)
  __atomic_store_n(&g_cuda_ok, true, __ATOMIC_RELEASE);
}

static void load_nvml(void) {
  void *lib = open_driver("libnvidia-ml.so.1");
  if (lib == NULL) return;
#define VG_RESOLVE_NVML(n) resolve(lib, #n, (void **)&vg_nvml.n);
  VG_NVML_HOOKS(VG_RESOLVE_NVML)
  VG_NVML_USED(VG_RESOLVE_NVML)
  __atomic_store_n(&g_nvml_ok, true, __ATOMIC_RELEASE);
}

bool vg_cuda_load(void) {
  if (__atomic_load_n(&g_cuda_ok, __ATOMIC_ACQUIRE)) return true; /* every hook: keep it cheap */
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, load_cuda);
  return g_cuda_ok;
}

bool vg_nvml_load(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, load_nvml);
  return g_nvml_ok;
}

static int compare_entry(const void *key, const void *elem) {
  return strcmp((const char *)key, ((const struct hook_entry *)elem)->name);
}

static const struct hook_entry *find(const char *name) {
  /* The X-macro lists are kept in strcmp order; see test_hook_table. */
  return bsearch(name, g_hooks, VG_NHOOKS, sizeof(g_hooks[0]), compare_entry);
}

void *vg_hook_by_name(const char *name) {
  const struct hook_entry *e = find(name);
  return e != NULL ? e->hook : NULL;
}

static bool is_nvml_name(const char *name) { return strncmp(name, "nvml", 4) == 0; }

/* True once our table for that library is filled (never waits for it). */
static bool loaded(const char *name) {
  return __atomic_load_n(is_nvml_name(name) ? &g_nvml_ok : &g_cuda_ok, __ATOMIC_ACQUIRE);
}

/* Whether sym is exported by the driver library for name: compared with our
 * table once it is filled; before that, judged by the library sym lives in
 * (dladdr), because waiting for the table inside dlsym could deadlock with
 * the dynamic loader's lock. */
static bool from_driver(const char *name, const struct hook_entry *e, void *sym) {
  if (loaded(name)) return *e->real == sym;
  Dl_info info;
  if (dladdr(sym, &info) == 0 || info.dli_fname == NULL) return false;
  const char *base = strrchr(info.dli_fname, '/');
  base = base != NULL ? base + 1 : info.dli_fname;
  const char *soname = is_nvml_name(name) ? "libnvidia-ml.so" : "libcuda.so";
  return strncmp(base, soname, strlen(soname)) == 0;
}

void *vg_redirect_driver_symbol(const char *name, void *sym) {
  const struct hook_entry *e = find(name);
  if (e == NULL || e->hook == sym) return sym;
  return from_driver(name, e, sym) ? e->hook : sym;
}

void *vg_hook_by_real(const void *real) {
  if (real == NULL || !vg_cuda_load()) return NULL;
  for (size_t i = 0; i < VG_NHOOKS; i++) {
    if (!is_nvml_name(g_hooks[i].name) && *g_hooks[i].real == real) return g_hooks[i].hook;
  }
  return NULL;
}

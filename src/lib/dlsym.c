/*
 * dlsym.c -- our dlsym, the second way programs reach the driver.
 *
 * Two properties matter more than the redirect itself:
 *  - RTLD_NEXT means "the next object after the *caller*", and glibc learns
 *    the caller from its return address. For RTLD_NEXT we therefore jump
 *    straight into glibc's dlsym as a sibling call (a tail call compiled to a
 *    jmp at -O2, which keeps the caller's return address); any other
 *    library's own interposition keeps working. tests/integration checks this.
 *  - Everything that is not a driver entry point returns at once: only names
 *    beginning with "cu" or "nvml" are looked at.
 */
#include <dlfcn.h>
#include <string.h>

#include "hooks.h"
#include "interpose.h"

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn g_real_dlsym;

static dlsym_fn real_dlsym(void) {
  dlsym_fn fn = __atomic_load_n(&g_real_dlsym, __ATOMIC_ACQUIRE);
  if (fn != NULL) return fn;
  /* The glibc versions dlsym has been exported under on 64-bit Linux. */
  static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
  for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && fn == NULL; i++)
    fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
  __atomic_store_n(&g_real_dlsym, fn, __ATOMIC_RELEASE);
  return fn;
}

void *vg_real_dlsym(void *handle, const char *name) {
  dlsym_fn fn = real_dlsym();
  return fn != NULL ? fn(handle, name) : NULL;
}

void *vg_redirect_symbol(const char *name, void *sym) {
  if (sym == NULL || name == NULL) return sym;
  bool driver_name = (name[0] == 'c' && name[1] == 'u') || strncmp(name, "nvml", 4) == 0;
  if (!driver_name) return sym;
  return vg_redirect_driver_symbol(name, sym);
}

VG_EXPORT void *dlsym(void *handle, const char *name) {
  dlsym_fn fn = real_dlsym();
  if (handle == RTLD_NEXT) return fn(handle, name); /* sibling call: see above */
  return vg_redirect_symbol(name, fn(handle, name));
}

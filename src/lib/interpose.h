/*
 * interpose.h -- the dlsym path into the driver.
 *
 * Programs that dlopen libcuda.so.1 and dlsym its entry points would bypass
 * a preloaded library, because a lookup through a handle searches only that
 * library. libvgpu therefore exports dlsym itself (dlsym.c) and answers with
 * its hook when the driver's own function would have been returned.
 */
#ifndef VG_INTERPOSE_H
#define VG_INTERPOSE_H

/* glibc's dlsym, found with dlvsym; never our override. */
void *vg_real_dlsym(void *handle, const char *name);

/* The hook to return instead of sym for a lookup of name, or sym itself. */
void *vg_redirect_symbol(const char *name, void *sym);

#endif

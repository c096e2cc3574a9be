/*
 * glibc_compat.h -- binds the in-container libraries to symbol versions that
 * old glibc releases have, whatever glibc builds them.
 *
 * libvgpu.so and the simulated driver (libcuda.so.1, libnvidia-ml.so.1) are
 * loaded into the workload's own userland: a CUDA image may be UBI 8 (glibc
 * 2.28), Ubuntu 20.04 (2.31) or CentOS 7 (2.17). Built on glibc 2.34+, the
 * dl* and pthread* functions would be bound to their GLIBC_2.34 versions
 * (when they moved into libc.so.6) and fstat to GLIBC_2.33 (when it stopped
 * being an inline wrapper), and ld.so would refuse the library ("cannot be
 * preloaded: ignored"): the workload would run without limits.
 *
 * This header is force-included (-include, vg_glibc_compat in CMake) into
 * those libraries' sources only. It binds each such function to the oldest
 * version glibc still exports it under (x86_64: GLIBC_2.2.5 or 2.12;
 * aarch64: its baseline GLIBC_2.17), which every release since has kept as
 * a compatibility symbol, so the result is at most GLIBC_2.17.
 * On glibc < 2.34 those functions live in libdl.so.2 and libpthread.so.0;
 * the same CMake target therefore links both unconditionally (on 2.34+ they
 * are empty stubs). tests/glibc checks the result.
 */
#ifndef VG_GLIBC_COMPAT_H
#define VG_GLIBC_COMPAT_H

#include <features.h>
#if defined(__GLIBC__)

#include <sys/stat.h>

#if defined(__x86_64__)
#define VG_GLIBC_BASE "GLIBC_2.2.5"
#define VG_GLIBC_ROBUST "GLIBC_2.12"  /* robust mutexes arrived in 2.12 */
#define VG_GLIBC_DLINFO "GLIBC_2.3.3" /* dlinfo arrived in 2.3.3 */
#define VG_STAT_VER 1                 /* _STAT_VER_LINUX */
#elif defined(__aarch64__)
#define VG_GLIBC_BASE "GLIBC_2.17"
#define VG_GLIBC_ROBUST "GLIBC_2.17"
#define VG_GLIBC_DLINFO "GLIBC_2.17"
#define VG_STAT_VER 0
#else
#error "glibc_compat.h: add this architecture's oldest glibc symbol versions"
#endif

#define VG_GLIBC_PIN(sym, ver) __asm__(".symver " #sym "," #sym "@" ver)

/* What these libraries call; tests/glibc names anything new to add here. */
VG_GLIBC_PIN(dlopen, VG_GLIBC_BASE);
VG_GLIBC_PIN(dlclose, VG_GLIBC_BASE);
VG_GLIBC_PIN(dlerror, VG_GLIBC_BASE);
VG_GLIBC_PIN(dladdr, VG_GLIBC_BASE);
VG_GLIBC_PIN(dlvsym, VG_GLIBC_BASE);
VG_GLIBC_PIN(dlinfo, VG_GLIBC_DLINFO);
#ifdef VG_COMPAT_PIN_DLSYM
VG_GLIBC_PIN(dlsym, VG_GLIBC_BASE);
#endif
VG_GLIBC_PIN(pthread_once, VG_GLIBC_BASE);
VG_GLIBC_PIN(pthread_mutexattr_init, VG_GLIBC_BASE);
VG_GLIBC_PIN(pthread_mutexattr_destroy, VG_GLIBC_BASE);
VG_GLIBC_PIN(pthread_mutexattr_setpshared, VG_GLIBC_BASE);
VG_GLIBC_PIN(pthread_mutexattr_setrobust, VG_GLIBC_ROBUST);
VG_GLIBC_PIN(pthread_mutex_consistent, VG_GLIBC_ROBUST);
VG_GLIBC_PIN(pthread_mutex_timedlock, VG_GLIBC_BASE);
VG_GLIBC_PIN(__fxstat, VG_GLIBC_BASE);
VG_GLIBC_PIN(__xstat, VG_GLIBC_BASE);

/* Before 2.33, <sys/stat.h>'s fstat and stat were inline calls of __fxstat
 * and __xstat; calling those is what a program built on an old glibc does. */
int __fxstat(int ver, int fd, struct stat *buf);
int __xstat(int ver, const char *path, struct stat *buf);
static inline int vg_compat_fstat(int fd, struct stat *buf) {
  return __fxstat(VG_STAT_VER, fd, buf);
}
static inline int vg_compat_stat(const char *path, struct stat *buf) {
  return __xstat(VG_STAT_VER, path, buf);
}
#define fstat(fd, buf) vg_compat_fstat((fd), (buf))
#define stat(path, buf) vg_compat_stat((path), (buf))

#endif
#endif

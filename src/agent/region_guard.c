/* region_guard.c -- see region_guard.h. */
#include "region_guard.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* Written by the guarding thread, read by the signal handler: a slot is
 * live while base is set, and size and lost are valid whenever it is. */
static struct {
  char *base;
  size_t size;
  int lost;
} guards[VG_REGION_GUARDS];

static struct sigaction previous;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static void pass_on(int sig, siginfo_t *info, void *uc) {
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, uc);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  /* Default: the access faults again on return and the process dies of it. */
  signal(sig, SIG_DFL);
}

static void on_sigbus(int sig, siginfo_t *info, void *uc) {
  char *at = info->si_addr;
  for (int i = 0; i < VG_REGION_GUARDS; i++) {
    char *base = __atomic_load_n(&guards[i].base, __ATOMIC_ACQUIRE);
    if (base == NULL || at < base || at >= base + guards[i].size) continue;
    /* mmap is a plain system call: safe here, whatever POSIX lists. */
    if (mmap(base, guards[i].size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
             -1, 0) == MAP_FAILED)
      break;
    __atomic_store_n(&guards[i].lost, 1, __ATOMIC_RELEASE);
    return;
  }
  pass_on(sig, info, uc);
}

/* Puts the handler in place unless it is there: checked at every guard,
 * since anything else in the process (a test framework, a library) may
 * have set its own since; what was there is passed every other SIGBUS. */
static int install(void) {
  struct sigaction now, sa;
  pthread_mutex_lock(&install_lock);
  int rc = sigaction(SIGBUS, NULL, &now);
  if (rc == 0 && !((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus)) {
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    previous = now;
    rc = sigaction(SIGBUS, &sa, NULL);
  }
  pthread_mutex_unlock(&install_lock);
  return rc;
}

static int find(const struct vg_shm *shm) {
  for (int i = 0; i < VG_REGION_GUARDS; i++)
    if (__atomic_load_n(&guards[i].base, __ATOMIC_ACQUIRE) == (char *)shm->base) return i;
  return -1;
}

int vg_region_guard(struct vg_shm *shm) {
  if (shm->base == NULL || install() != 0) return -1;
  for (int i = 0; i < VG_REGION_GUARDS; i++) {
    char *none = NULL;
    if (__atomic_load_n(&guards[i].base, __ATOMIC_ACQUIRE) != NULL) continue;
    guards[i].size = shm->size;
    guards[i].lost = 0;
    if (__atomic_compare_exchange_n(&guards[i].base, &none, (char *)shm->base, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return 0;
  }
  return -1;
}

bool vg_region_guard_lost(const struct vg_shm *shm) {
  int i = shm->base != NULL ? find(shm) : -1;
  return i >= 0 && __atomic_load_n(&guards[i].lost, __ATOMIC_ACQUIRE);
}

bool vg_region_guard_close(struct vg_shm *shm) {
  int i = shm->base != NULL ? find(shm) : -1;
  bool lost = i >= 0 && __atomic_load_n(&guards[i].lost, __ATOMIC_ACQUIRE);
  if (i >= 0) __atomic_store_n(&guards[i].base, NULL, __ATOMIC_RELEASE);
  if (lost) shm->base = NULL; /* left mapped: see region_guard.h */
  vg_shm_close(shm);
  return lost;
}

/* next_a.c -- a library that wraps next_probe() and reaches the real one
 * with dlsym(RTLD_NEXT), as interposers do. Loaded after libvgpu, it must get
 * next_b's function, not its own. */
#include <dlfcn.h>

int next_probe(void) {
  int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "next_probe");
  if (next == (int (*)(void))next_probe || next == 0) return -1;
  return 100 + next();
}

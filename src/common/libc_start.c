/*
 * libc_start.c -- lets an executable (vgpu-burn, the vgpu CLI) start on
 * glibc older than the one that built it (down to 2.17), so it can run in
 * old CUDA images (tests/e2e's old-userland case; the CLI is mounted into
 * every GPU container).
 *
 * The program's startup code (Scrt1.o) calls __libc_start_main, which glibc
 * 2.34 versioned anew (GLIBC_2.34): the old loader refuses such a binary.
 * The link wraps that call (--wrap=__libc_start_main) into this one, which
 * calls the oldest version instead. The two versions differ in one
 * argument: 2.34's startup code passes no init function and expects libc to
 * run the program's constructors, which an old libc does not do. So an init
 * function is always passed, running _init and .init_array as the startup
 * code of old glibc did (__libc_csu_init); given one, every glibc calls it
 * instead of running them itself. (.preinit_array is the loader's job in a
 * dynamic program, in every glibc.)
 */
#include <stddef.h>

typedef int (*main_fn)(int, char **, char **);
typedef void (*init_fn)(int, char **, char **);

int vg_libc_start_main_old(main_fn main, int argc, char **argv, init_fn init, void (*fini)(void),
                           void (*rtld_fini)(void), void *stack_end);
__asm__(".symver vg_libc_start_main_old,__libc_start_main@" VG_GLIBC_BASE);

/* Provided for the executable by the linker (the array) and crti.o (_init). */
extern init_fn __init_array_start[], __init_array_end[];
extern void _init(void);

static void run_constructors(int argc, char **argv, char **envp) {
  _init();
  for (init_fn *f = __init_array_start; f < __init_array_end; f++) (*f)(argc, argv, envp);
}

int __wrap___libc_start_main(main_fn main, int argc, char **argv, init_fn init, void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end);
int __wrap___libc_start_main(main_fn main, int argc, char **argv, init_fn init, void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end) {
  return vg_libc_start_main_old(main, argc, argv, init != NULL ? init : run_constructors, fini,
                                rtld_fini, stack_end);
}

/* abi_dump.c -- prints the facts of abi_items.h as seen through one header
 * (ours, or NVIDIA's with -DVG_USE_REAL_CUDA_H); the test compares both. */
#include <stddef.h>
#include <stdio.h>

#ifdef VG_USE_REAL_CUDA_H
#include <cuda.h>
#else
#include "cuda_abi.h"
#endif
#include "abi_items.h"

#define PRINT_VALUE(n) printf("%s %lld\n", #n, (long long)(n));
#define PRINT_SIZE(t) printf("sizeof(%s) %zu\n", #t, sizeof(t));
#define PRINT_FIELD(t, f) printf("offsetof(%s,%s) %zu\n", #t, #f, offsetof(t, f));

int main(void) {
  VG_ABI_VALUES(PRINT_VALUE)
  VG_ABI_STRUCTS(PRINT_SIZE)
  VG_ABI_FIELDS(PRINT_FIELD)
  return 0;
}

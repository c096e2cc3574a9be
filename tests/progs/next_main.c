/* next_main.c -- prints next_probe(): 107 when RTLD_NEXT resolves correctly. */
#include <stdio.h>
int next_probe(void);
int main(void) {
  printf("{\"next\":%d}\n", next_probe());
  return 0;
}

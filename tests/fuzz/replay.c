/* replay.c -- runs a fuzz target without libFuzzer (gcc build, make test):
 * every file of the seed corpus, then a fixed number of inputs mutated from
 * them with a fixed seed, so regressions found by fuzzing stay found. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t load(const char *path, uint8_t *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  static uint8_t seeds[256][512];
  static size_t lens[256];
  int nseeds = 0, runs = argc > 2 ? atoi(argv[2]) : 20000;
  DIR *dir = argc > 1 ? opendir(argv[1]) : NULL;
  for (struct dirent *e; dir != NULL && (e = readdir(dir)) != NULL && nseeds < 256;) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
    lens[nseeds] = load(path, seeds[nseeds], sizeof(seeds[0]));
    LLVMFuzzerTestOneInput(seeds[nseeds], lens[nseeds]);
    nseeds++;
  }
  if (dir != NULL) closedir(dir);
  srand(12345);
  uint8_t buf[512];
  for (int i = 0; i < runs && nseeds > 0; i++) {
    int s = rand() % nseeds;
    size_t n = lens[s];
    memcpy(buf, seeds[s], n);
    for (int m = rand() % 4; m >= 0; m--) {
      int op = rand() % 3;
      if (op == 0 && n > 0)
        buf[rand() % n] = (uint8_t)rand();
      else if (op == 1 && n < sizeof(buf))
        buf[n++] = (uint8_t)(rand() % 128);
      else if (n > 0)
        n--;
    }
    LLVMFuzzerTestOneInput(buf, n);
  }
  printf("replayed %d seeds and %d mutations\n", nseeds, runs);
  return 0;
}

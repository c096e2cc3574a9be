#!/usr/bin/env bash
# make fuzz -- libFuzzer (clang) on each parser for FUZZ_SECONDS (default 60) each.
# Crashes are saved under build-fuzz/; add them to tests/fuzz/corpus/<target>/ as regressions.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${FUZZ_SECONDS:-60}"
out=build-fuzz
mkdir -p "$out"
common="src/common/err.c src/common/log.c src/common/size.c src/common/quantity.c src/common/shmfile.c src/common/region.c src/common/grant.c"
for t in size quantity config region grant plugin_config assignment resize extender webhook; do
  extra=""
  [ "$t" = config ] && extra="src/lib/config.c"
  [ "$t" = plugin_config ] && extra="-Isrc/plugin src/plugin/config.c src/plugin/dialect.c -lyaml"
  [ "$t" = assignment ] && extra="-Isrc/k8s src/k8s/assignment.c -ljson-c"
  [ "$t" = resize ] && extra="-Isrc/k8s src/k8s/resize.c src/k8s/assignment.c src/k8s/json_get.c -ljson-c"
  if [ "$t" = extender ]; then # the extender and what it links: the placement core, k8s, httpd
    extra="-Isrc/k8s -Isrc/scheduler $(ls src/k8s/*.c src/common/httpd.c src/common/once.c \
      src/scheduler/*.c | grep -v -e _main.c -e replay.c) -ljson-c -lcurl -lyaml -lmicrohttpd -lm"
  fi
  [ "$t" = webhook ] && extra="-Isrc/k8s -Isrc/webhook src/common/base64.c src/k8s/json_get.c \
    src/k8s/pod_quantity.c src/webhook/resources.c src/webhook/decide.c src/webhook/patch.c \
    src/webhook/review.c -ljson-c"
  # shellcheck disable=SC2086
  clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/common -Isrc/lib \
    "tests/fuzz/fuzz_$t.c" $common $extra -lpthread -o "$out/fuzz_$t"
  mkdir -p "$out/corpus_$t"
  cp -n tests/fuzz/corpus/$t/* "$out/corpus_$t/" 2>/dev/null || true
  maxlen=512 # a review wraps a whole Pod: give the webhook's inputs room
  [ "$t" = webhook ] && maxlen=4096
  (cd "$out" && "./fuzz_$t" -max_total_time="$secs" -max_len="$maxlen" "corpus_$t")
done

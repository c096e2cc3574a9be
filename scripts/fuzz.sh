#!/usr/bin/env bash
# scripts/fuzz.sh -- libFuzzer (clang) on every target in tests/fuzz/, FUZZ_SECONDS each.
#   make fuzz        FUZZ_SECONDS default 60: fuzzing for real
#   make fuzz-smoke  FUZZ_SECONDS default 10: `make test`'s fuzz stage (scripts/test-all.sh)
# FUZZ_TARGETS="region grant" limits the run to those; FUZZ_JOBS (default: the CPUs) fuzzers run
# at once; FUZZ_CC (default clang) is the compiler.
#
# build-fuzz/ is a CMake build with -DVGPU_FUZZ=ON: each target is built from its one declaration
# in tests/fuzz/CMakeLists.txt, the same one its replay test (make test) uses. A target is every
# tests/fuzz/fuzz_<name>.c, so one that CMake does not declare fails to build here.
#
# Every target is built and run even when one fails; the exit status is 1 if any failed to build,
# crashed, leaked, hung (over 10 s on one input) or broke one of its own checks. Its libFuzzer log
# is build-fuzz/log/<name>.log; the input that failed is saved as build-fuzz/crashes/<name>-*:
# fix the bug, then add the input to tests/fuzz/corpus/<name>/ so the replay keeps it fixed. New
# inputs the fuzzer finds collect in build-fuzz/corpus/<name>/ (the seeds in tests/fuzz/corpus/
# are read, never written). The last line sums up, e.g.
#   fuzz: 11/11 targets clean, 10 s each
#   fuzz: 10/11 targets clean, 10 s each; FAILED: webhook (build)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
out=build-fuzz
cc=${FUZZ_CC:-clang}

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  targets=()
  for f in tests/fuzz/fuzz_*.c; do
    t=${f#tests/fuzz/fuzz_}
    targets+=("${t%.c}")
  done
fi

# fail WHY: no target can be tried.
fail() {
  echo "$1" >&2
  echo "fuzz: 0/${#targets[@]} targets clean: $2"
  exit 1
}

# clang and its libFuzzer runtime (Debian: libclang-rt-dev, which scripts/deps.sh installs).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
  >"$probe/p.c"
"$cc" -fsanitize=fuzzer,address "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1 ||
  fail "$(cat "$probe/log")
vgpu: $cc cannot link a libFuzzer target; on Debian: apt-get install clang libclang-rt-dev \
(scripts/deps.sh installs them)" "no libFuzzer ($cc -fsanitize=fuzzer fails)"

mkdir -p "$out/log" "$out/crashes"
CC=$cc cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVGPU_FUZZ=ON \
  >"$out/log/configure.log" 2>&1 ||
  fail "$(tail -n 30 "$out/log/configure.log")" "configuring $out failed ($out/log/configure.log)"

# Build each target on its own, so that each one's result is its own.
failed=()
built=()
for t in "${targets[@]}"; do
  log=$out/log/$t.build.log
  rm -f "$out/fuzz/fuzz_$t" # never fuzz a binary left over from an earlier build
  if cmake --build "$out" -j "$jobs" --target "fuzz_$t" >"$log" 2>&1; then
    built+=("$t")
  else
    grep -E 'error|No rule to make target' "$log" | head -n 20 >&2
    echo "fuzz_$t: build FAILED ($log)" >&2
    failed+=("$t (build)")
  fi
done

# run_one NAME: fuzzes it for $secs; its exit status goes to $out/log/NAME.rc.
run_one() {
  local t=$1 maxlen=512 log=$out/log/$1.log
  [ "$t" = webhook ] && maxlen=4096 # a review wraps a whole Pod: give its inputs room
  mkdir -p "$out/corpus/$t"
  # A hard stop well past max_total_time, in case libFuzzer itself never returns.
  timeout -k 10 $((secs + 120)) "$out/fuzz/fuzz_$t" -max_total_time="$secs" -max_len="$maxlen" \
    -timeout=10 -artifact_prefix="$out/crashes/$t-" "$out/corpus/$t" "tests/fuzz/corpus/$t" \
    >"$log" 2>&1
  echo $? >"$out/log/$t.rc"
}

echo "fuzz: ${#built[@]} targets built; fuzzing $secs s each, $jobs at a time" >&2
running=0
for t in "${built[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

for t in "${built[@]}"; do
  log=$out/log/$t.log
  rc=$(cat "$out/log/$t.rc" 2>/dev/null || echo 1)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
  if [ "$rc" -eq 0 ] && [ -n "$done_line" ]; then
    cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<<"$done_line")
    runs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$done_line")
    echo "fuzz_$t: ok, $runs runs, cov $cov"
  else
    grep -E 'ERROR|SUMMARY|^    #[0-9]' "$log" | head -n 30 >&2
    artifact=$(grep -Eo "$out/crashes/$t-[^ ]+" "$log" | tail -n 1)
    echo "fuzz_$t: FAILED, exit $rc ($log${artifact:+; input $artifact})" >&2
    failed+=("$t (${artifact:+crashed: }${artifact:-exit $rc})")
  fi
done

clean=$((${#targets[@]} - ${#failed[@]}))
if [ ${#failed[@]} -eq 0 ]; then
  echo "fuzz: $clean/${#targets[@]} targets clean, $secs s each"
  exit 0
fi
fail_list=$(printf '%s, ' "${failed[@]}")
echo "fuzz: $clean/${#targets[@]} targets clean, $secs s each; FAILED: ${fail_list%, }"
exit 1

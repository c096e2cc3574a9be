#!/usr/bin/env bash
# scripts/test-all.sh -- `make test`: every stage, each one's result kept, and
# one closing line that says them all.
#
# The stages are the make targets test-release (the release build's CTest),
# test-asan (the AddressSanitizer + UBSan build's), test-gpu (tests/gpu on a
# real GPU, SKIP without one), e2e (the real cluster, tests/e2e), fuzz-smoke
# (every libFuzzer target of tests/fuzz built and run FUZZ_SECONDS, default 10,
# each: scripts/fuzz.sh) and the format check. A stage that fails does not stop
# the others, so one run says everything that is wrong; the exit status is 1
# if any stage failed. Each stage's output goes to the terminal and to
# build/test-<stage>.log. The last line reads, for example:
#   make test: release 111/111 passed | sanitizer 111/111 passed | gpu SKIP: no NVIDIA GPU ... | e2e 40 passed, 0 failed | fuzz 11/11 targets clean, 10 s each | format ok -- PASS
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
mkdir -p build
results=()
failed=0

# summary NAME LOG RC: the stage's one-line result, from its own output.
summary() {
  local name=$1 log=$2 rc=$3 line=""
  case $name in
    release | sanitizer)
      line=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 |
        awk '{printf "%d/%d passed", $6 - $1, $6}')
      ;;
    gpu) line=$(grep -E '^SKIP: no NVIDIA GPU|^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1) ;;
    e2e) line=$(grep -E '^e2e: SKIP|^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1) ;;
    fuzz) line=$(grep -E '^fuzz: ' "$log" | tail -n 1 | sed 's/^fuzz: //') ;;
    format) [ "$rc" -eq 0 ] && line=ok ;;
  esac
  [ -n "$line" ] || line="exit $rc"
  [ "$rc" -eq 0 ] || line="$line (FAILED, see build/test-$name.log)"
  echo "$name $line"
}

# stage NAME COMMAND...: runs it, keeps its log and result.
stage() {
  local name=$1 log=build/test-$1.log rc
  shift
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || failed=1
  results+=("$(summary "$name" "$log" "$rc")")
}

stage release "$MAKE" --no-print-directory test-release
stage sanitizer "$MAKE" --no-print-directory test-asan
stage gpu "$MAKE" --no-print-directory test-gpu
stage e2e "$MAKE" --no-print-directory e2e
stage fuzz "$MAKE" --no-print-directory fuzz-smoke
stage format bash scripts/check-format.sh

line=$(printf '%s | ' "${results[@]}")
echo
echo "make test: ${line% | } -- $([ $failed -eq 0 ] && echo PASS || echo FAIL)"
exit $failed

#!/usr/bin/env bash
# run-hook-bench.sh -- the cost libvgpu adds to driver calls, as ratios
# measured in one run (docs/benchmarks.md explains the output).
#
# vgpu-bench-hook runs on the simulated GPU in three configurations,
# alternated round by round so that machine noise hits all of them alike:
#   without     no preload                                   (the baseline)
#   with        LD_PRELOAD=libvgpu.so, no limit set          (pass-through)
#   with+limit  LD_PRELOAD=libvgpu.so, CUDA_DEVICE_MEMORY_LIMIT=8g (enforcing)
# Every process gets a fresh simulator state file and region file and an
# otherwise empty environment, so nothing from the caller's shell (a limit
# left exported, say) leaks in. For each configuration and case the best
# (lowest) ns/op over all rounds is kept.
#
# --callgrind runs every case once per configuration under
# valgrind --tool=callgrind with fixed iteration counts and reports
# instructions per operation: slower, but the same numbers on every run.
#
# --real measures on NVIDIA's driver instead of the simulator (a machine
# with a GPU; tests/gpu/lent-machine.sh runs it), where a call costs what it
# costs in production -- the simulator's calls are far cheaper, so the same
# added nanoseconds give a larger ratio there. --launch measures kernel
# launches (vgpu-bench-launch: cuLaunchKernel, cuLaunchKernelEx) instead of
# the memory and query calls; its with+limit is CUDA_DEVICE_SM_LIMIT=50.
#
# usage: bash bench/run-hook-bench.sh [--callgrind] [--runs N] [--real] [--launch]
#          [--iters N] [--alloc-iters N]                  (repo root, after make)
# env:   VGPU_BUILD_DIR (default build)

set -euo pipefail

usage() {
  echo "usage: bash bench/run-hook-bench.sh [--callgrind] [--runs N] [--real] [--launch] [--iters N] [--alloc-iters N]"
  echo "  --runs N        alternating rounds of the three configurations (default 5)"
  echo "  --callgrind     count instructions per operation with valgrind instead of timing"
  echo "  --real          NVIDIA's driver instead of the simulator (needs a GPU)"
  echo "  --launch        kernel launches (vgpu-bench-launch) instead of memory and query calls"
  echo "  --iters N       calls per round of the cheap cases (the benchmark's default otherwise)"
  echo "  --alloc-iters N alloc/free pairs per round (hook) or launches per batch (--launch)"
}

mode="time"
runs=5
driver=sim
what=hook
iter_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --callgrind) mode=callgrind ;;
    --real) driver=real ;;
    --launch) what=launch ;;
    --runs | --iters | --alloc-iters)
      [ $# -ge 2 ] || { echo "run-hook-bench: $1 needs a value" >&2; exit 2; }
      case "$2" in
        '' | *[!0-9]* | 0) echo "run-hook-bench: $1: '$2' is not a whole number > 0" >&2; exit 2 ;;
      esac
      case "$1" in
        --runs) runs=$2 ;;
        --iters) iter_args+=(--iters "$2") ;;
        --alloc-iters) iter_args+=(--alloc-iters "$2") ;;
      esac
      shift
      ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run-hook-bench: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

build=${VGPU_BUILD_DIR:-build}
build=$(cd "$build" 2>/dev/null && pwd) || {
  echo "run-hook-bench: build directory '${VGPU_BUILD_DIR:-build}' not found; run 'make' first (from the repo root)" >&2
  exit 1
}
simdir=$build/sim
lib=$build/lib/libvgpu.so
if [ "$what" = launch ]; then
  bench=$build/bin/vgpu-bench-launch
  cases="launch launch_ex"
  limit_env=CUDA_DEVICE_SM_LIMIT=50
  # vgpu-bench-launch calls its batch size --batch.
  iter_args=("${iter_args[@]/--alloc-iters/--batch}")
else
  bench=$build/bin/vgpu-bench-hook
  cases="alloc_free device_total_mem driver_version ctx_get_device"
  limit_env=CUDA_DEVICE_MEMORY_LIMIT=8g
fi
needed=("$bench" "$lib")
[ "$driver" = sim ] && needed+=("$simdir/libcuda.so.1")
if [ "$driver" = real ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "run-hook-bench: --real needs an NVIDIA GPU (nvidia-smi -L lists none)" >&2
  exit 1
fi
for f in "${needed[@]}"; do
  if [ ! -e "$f" ]; then
    echo "run-hook-bench: $f is missing; build it first ('make', or cmake --build $build)" >&2
    exit 1
  fi
done
if [ "$mode" = callgrind ] && ! command -v valgrind >/dev/null 2>&1; then
  echo "run-hook-bench: --callgrind needs valgrind (apt-get install valgrind)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-hook-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

configs="without with with+limit"
seq_no=0

# run_config CONFIG OUTFILE CMD... : runs CMD in a clean environment for
# CONFIG with fresh state files; stdout goes to OUTFILE.
run_config() {
  local config=$1 out=$2
  shift 2
  seq_no=$((seq_no + 1))
  local envs=("PATH=$PATH" "HOME=${HOME:-/tmp}" "CUDA_DEVICE_MEMORY_SHARED_CACHE=$tmp/region.$seq_no.cache")
  # The simulator's kernels take no time (VGPU_SIM_WAVE_US=0), so a launch
  # costs only its call, as on a real GPU's asynchronous queue.
  [ "$driver" = sim ] && envs+=("LD_LIBRARY_PATH=$simdir" "VGPU_SIM_STATE=$tmp/sim.$seq_no.state" "VGPU_SIM_WAVE_US=0")
  case "$config" in
    with) envs+=("LD_PRELOAD=$lib") ;;
    with+limit) envs+=("LD_PRELOAD=$lib" "$limit_env") ;;
  esac
  if ! env -i "${envs[@]}" "$@" >"$out" 2>"$out.err"; then
    echo "run-hook-bench: '$*' failed in configuration '$config':" >&2
    cat "$out.err" >&2
    exit 1
  fi
}

# json_get FILE KEY : a number from the JSON object on FILE's last line.
json_get() {
  local v
  v=$(tail -n 1 "$1" | sed -n "s/.*\"$2\":\([0-9.eE+-]*\).*/\1/p")
  if [ -z "$v" ]; then
    echo "run-hook-bench: no \"$2\" in the output of vgpu-bench-hook ($1)" >&2
    exit 1
  fi
  echo "$v"
}

# target CASE CONFIG : the issue's target for added cost, or "-".
target() {
  case "$1/$2" in
    alloc_free/*) echo 150 ;;
    launch*/with) echo 30 ;;
    launch*/with+limit) echo - ;; # the limiter may hold a launch back: that is its job
    device_total_mem/with+limit) echo - ;; # virtualised, not a pass-through
    *) echo 20 ;;
  esac
}

# print_table UNIT FILE : FILE has lines "case config without with".
print_table() {
  awk -v unit="$1" '
    BEGIN {
      printf "%-18s %-11s %12s %12s %10s %7s  %s\n", "case", "config", unit " without", unit " with", "added", "ratio", "target (added)"
    }
    {
      added = $4 - $3; ratio = ($3 > 0) ? $4 / $3 : 0
      verdict = "-"
      if (unit == "ns" && $5 != "-") verdict = sprintf("< %s ns: %s", $5, (added < $5) ? "met" : "NOT met")
      printf "%-18s %-11s %12.1f %12.1f %10.1f %7.2f  %s\n", $1, $2, $3, $4, added, ratio, verdict
    }' "$2"
}

# where : the driver the figures come from, for the table's title.
where() {
  if [ "$driver" = sim ]; then echo "the simulator"; else
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1 | sed 's/, / (driver /; s/$/)/'
  fi
}

time_mode() {
  local r config c v
  declare -A best=()
  for ((r = 1; r <= runs; r++)); do
    for config in $configs; do
      run_config "$config" "$tmp/out" "$bench" "${iter_args[@]}" --json
      for c in $cases; do
        v=$(json_get "$tmp/out" "${c}_ns")
        if [ -z "${best[$config/$c]:-}" ] || awk -v a="$v" -v b="${best[$config/$c]}" 'BEGIN { exit !(a < b) }'; then
          best[$config/$c]=$v
        fi
      done
    done
  done
  : >"$tmp/table"
  for c in $cases; do
    for config in with with+limit; do
      echo "$c $config ${best[without/$c]} ${best[$config/$c]} $(target "$c" "$config")" >>"$tmp/table"
    done
  done
  echo "${bench##*/} on $(where): best ns/op of $runs alternating rounds per configuration"
  echo "(without = no preload; with = LD_PRELOAD=libvgpu.so, no limit; with+limit = also $limit_env)"
  print_table ns "$tmp/table"
}

callgrind_mode() {
  local config c out ir ops
  local fixed=(--iters 20000 --alloc-iters 5000 --rounds 1 --json)
  [ "$what" = launch ] && fixed=(--iters 20000 --batch 256 --rounds 1 --json)
  declare -A per_op=()
  for config in $configs; do
    for c in $cases; do
      out=$tmp/cg.$config.$c
      run_config "$config" "$out.stdout" valgrind --tool=callgrind --toggle-collect=bench_timed \
        --callgrind-out-file="$out" "$bench" --case "$c" "${fixed[@]}"
      ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out")
      ops=$(json_get "$out.stdout" "${c}_ops")
      [ -n "$ir" ] || { echo "run-hook-bench: no totals in $out" >&2; exit 1; }
      per_op[$config/$c]=$(awk -v i="$ir" -v n="$ops" 'BEGIN { printf "%.2f", i / n }')
    done
  done
  : >"$tmp/table"
  for c in $cases; do
    for config in with with+limit; do
      echo "$c $config ${per_op[without/$c]} ${per_op[$config/$c]} $(target "$c" "$config")" >>"$tmp/table"
    done
  done
  echo "${bench##*/} under callgrind on $(where): instructions per operation (${fixed[*]:0:6})"
  echo "(without = no preload; with = LD_PRELOAD=libvgpu.so, no limit; with+limit = also $limit_env)"
  print_table Ir "$tmp/table"
}

if [ "$mode" = callgrind ]; then callgrind_mode; else time_mode; fi

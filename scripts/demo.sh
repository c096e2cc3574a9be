#!/usr/bin/env bash
# make demo -- vgpu on the simulated GPU in about 30 seconds:
#   1. memory cap: a workload under --memory 200m stops at 200 MiB with a clean out-of-memory
#   2. compute cap: kernels/s unlimited and under --cores 30, as bars
#   3. vgpu set changes a running job's compute share: its throughput follows
#   4. nvidia-smi inside the slice shows the slice, not the whole GPU
# Every step checks its own numbers: the demo fails loudly if vgpu misbehaves. Run by
# `make demo` it first builds quietly (the log's path is printed; the log itself only on
# failure); under CTest (VGPU_BUILD_DIR set) it uses that build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${VGPU_BUILD_DIR:-}" ]; then
  mkdir -p "$root/build"
  log="$root/build/demo-build.log"
  echo "demo: building (output in $log)"
  if ! ${MAKE:-make} -C "$root" --no-print-directory build >"$log" 2>&1; then
    cat "$log"
    echo "demo: FAILED: the build failed (log above, also in $log)" >&2
    exit 1
  fi
fi
build="${VGPU_BUILD_DIR:-$root/build}"
vgpu="$build/bin/vgpu"
burn="$build/bin/vgpu-burn"
work=$(mktemp -d /tmp/vgpu-demo-XXXXXX)
job=""
trap '[ -n "$job" ] && kill $job 2>/dev/null; rm -rf "$work"' EXIT
export VGPU_SIM_STATE="$work/sim.state" VGPU_SIM_MEMORY=16g
# The demo plays a host, where the driver shows every GPU; inside a GPU
# container this variable names real GPUs, which the simulator would hide.
unset NVIDIA_VISIBLE_DEVICES CUDA_DEVICE_MEMORY_SHARED_CACHE
# Each vgpu run gets a region of its own; keep them here, apart from other
# runs on this machine, so that vgpu set finds this demo's job.
export XDG_RUNTIME_DIR="$work"
MiB=$((1024 * 1024))

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
fail() { echo "demo: FAILED: $*" >&2; exit 1; }
json() { tail -n 1 "$1" | sed -n "s/.*\"$2\": *\([a-z0-9.]*\).*/\1/p"; }
check() { # check NAME ACTUAL EXPECTED
  [ "$2" = "$3" ] || fail "$1 is $2, expected $3"
  echo "   ok: $1 = $2"
}
# bar VALUE FULL: a bar of 40 columns for FULL, VALUE's share of it.
bar() { awk -v v="$1" -v f="$2" 'BEGIN { n = int(40 * v / f + 0.5); if (n > 40) n = 40;
  s = ""; for (i = 0; i < n; i++) s = s "#"; printf "%-40s %6.0f kernels/s\n", s, v }'; }
# ratio A B: A/B with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

say "1. memory cap: vgpu-burn asks for 1 GiB under --memory 200m"
echo "\$ vgpu run --sim --memory 200m -- vgpu-burn --alloc 1g --chunk 10m"
"$vgpu" run --sim --memory 200m -- "$burn" --alloc 1g --chunk 10m --json >"$work/mem.out" 2>"$work/mem.err" ||
  { cat "$work/mem.err"; fail "vgpu run failed"; }
cat "$work/mem.err"
grep -v '^{' "$work/mem.out"
check "allocated bytes" "$(json "$work/mem.out" allocated_bytes)" $((200 * MiB))
check "stopped by out-of-memory" "$(json "$work/mem.out" oom)" true

say "2. compute cap: kernels/s with the GPU to itself, then under --cores 30"
for cores in 0 30; do
  "$vgpu" run -q --sim --cores $cores -- "$burn" --seconds 2 --json >"$work/cores$cores.out" 2>&1 ||
    { cat "$work/cores$cores.out"; fail "vgpu-burn --seconds 2 failed"; }
done
full=$(json "$work/cores0.out" kernels_per_s)
limited=$(json "$work/cores30.out" kernels_per_s)
printf '   unlimited   %s\n' "$(bar "$full" "$full")"
printf '   --cores 30  %s\n' "$(bar "$limited" "$full")"
share=$(ratio "$limited" "$full")
below "$share" 0.6 || fail "--cores 30 ran at $share of the unlimited rate"
echo "   ok: --cores 30 runs at $share of the unlimited rate"

say "3. vgpu set: a job started at --cores 20 is given 80 % while it runs"
echo "\$ vgpu run --sim --cores 20 -- vgpu-burn --seconds 8 --series 1000 &"
"$vgpu" run -q --sim --cores 20 -- "$burn" --seconds 8 --series 1000 --json >"$work/live.out" 2>"$work/live.err" &
job=$!
shown=0
while :; do
  running=0
  kill -0 "$job" 2>/dev/null && running=1
  mapfile -t points < <(sed -n 's/^t=\([0-9.]*\) .* kps=\([0-9.]*\)$/\1 \2/p' "$work/live.out")
  while [ "$shown" -lt "${#points[@]}" ]; do
    read -r t kps <<<"${points[$shown]}"
    shown=$((shown + 1))
    printf '   t=%-4.0f %s\n' "$t" "$(bar "$kps" "$full")"
    if [ "$shown" -eq 3 ]; then
      echo "\$ vgpu set --cores 80        # finds the job's region: the one vgpu run running"
      "$vgpu" set --cores 80 | sed 's/^/   /' || fail "vgpu set failed"
    fi
  done
  [ "$running" = 1 ] || break
  sleep 0.1
done
wait "$job" || { cat "$work/live.err"; fail "the job failed"; }
job=""
[ "$shown" -ge 7 ] || fail "only $shown throughput points: $(cat "$work/live.out")"
before=$(printf '%s\n' "${points[@]:1:2}" | awk '{ s += $2 } END { print s / NR }')
after=$(printf '%s\n' "${points[@]: -3}" | awk '{ s += $2 } END { print s / NR }')
gain=$(ratio "$after" "$before")
below 2 "$gain" || fail "after vgpu set --cores 80 the job ran only $gain times as fast"
echo "   ok: after vgpu set --cores 80 the job runs $gain times as fast"

say "4. nvidia-smi in the slice: a 16 GiB GPU, seen under --memory 4g"
# GPU-Util is NVML's, the whole GPU's over the last second (as nvidia-smi shows it in any
# container): step 3's job ended a moment ago, so wait until its kernels have left that
# window; else the idle slice would show that job's 75 %.
for _ in $(seq 30); do
  "$vgpu" smi --sim | grep -q 'MiB |      0%' && break
  sleep 0.1
done
echo "\$ vgpu run --sim --memory 4g -- vgpu smi"
"$vgpu" run -q --sim --memory 4g -- "$vgpu" smi >"$work/smi.out" 2>&1 || { cat "$work/smi.out"; fail "vgpu smi failed"; }
cat "$work/smi.out"
grep -q '|      0MiB /  4096MiB |      0%' "$work/smi.out" ||
  fail "vgpu smi does not show the idle 4096 MiB slice"
echo "   ok: the slice is 4096MiB; the node sees $("$vgpu" smi --sim | grep -o '[0-9]*MiB / [0-9]*MiB' | head -n 1)"
echo
echo "demo: all steps behaved as expected"

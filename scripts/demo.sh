#!/usr/bin/env bash
# make demo -- the main job on the simulated GPU (seed 000 without the rename):
#   1. a workload limited to 200 MiB stops at its limit with a clean out-of-memory
#   2. vgpu status shows the container's usage
#   3. the limit is raised to 300 MiB by a new process -- same region file
#   4. the workload gets the extra 100 MiB
# Every step checks its own numbers: the demo fails loudly if vgpu misbehaves.
set -euo pipefail
build="${VGPU_BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build}"
vgpu="$build/bin/vgpu"
burn="$build/bin/vgpu-burn"
work=$(mktemp -d /tmp/vgpu-demo-XXXXXX)
trap 'kill $holder 2>/dev/null || true; rm -rf "$work"' EXIT
holder=""
export VGPU_SIM_STATE="$work/sim.state" VGPU_SIM_MEMORY=16g
# The demo plays a host, where the driver shows every GPU; inside a GPU
# container this variable names real GPUs, which the simulator would hide.
unset NVIDIA_VISIBLE_DEVICES
export CUDA_DEVICE_MEMORY_SHARED_CACHE="$work/d.cache"
MiB=$((1024 * 1024))

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
json() { tail -n 1 "$1" | sed -n "s/.*\"$2\": *\([a-z0-9]*\).*/\1/p"; }
check() { # check NAME ACTUAL EXPECTED
  if [ "$2" != "$3" ]; then echo "demo: FAILED: $1 is $2, expected $3" >&2; exit 1; fi
  echo "   ok: $1 = $2"
}

say "1. vgpu-burn under a 200 MiB limit (nvidia.com/gpumem: '200'), holding what it gets"
"$vgpu" run --sim --memory 200m -- "$burn" --alloc 1g --chunk 10m --hold 6 --json \
  >"$work/first.out" 2>"$work/first.err" &
holder=$!
for _ in $(seq 100); do grep -q '^holding' "$work/first.out" 2>/dev/null && break; sleep 0.1; done
cat "$work/first.out"
check "allocated bytes" "$(sed -n 's/^allocated \([0-9]*\) bytes.*/\1/p' "$work/first.out")" $((200 * MiB))
check "stopped by out-of-memory" "$(sed -n 's/.*out of memory: \([a-z]*\).*/\1/p' "$work/first.out")" yes

say "2. vgpu status: the container's usage and limit (--sim: utilisation from the simulated NVML)"
"$vgpu" status --sim | tee "$work/status.out"
if grep -q 'n/a' "$work/status.out"; then echo "demo: FAILED: vgpu status shows n/a" >&2; exit 1; fi

say "3. export CUDA_DEVICE_MEMORY_LIMIT_0=300m and run again -- no new cache file"
CUDA_DEVICE_MEMORY_LIMIT_0=300m "$vgpu" run --sim -- "$burn" --alloc 1g --chunk 10m --json \
  >"$work/second.out" 2>"$work/second.err"
grep -v '^{' "$work/second.out" || true
check "extra bytes while the first still holds 200 MiB" "$(json "$work/second.out" allocated_bytes)" $((100 * MiB))
check "stopped by out-of-memory" "$(json "$work/second.out" oom)" true
"$vgpu" status --sim
check "region limit now" "$("$vgpu" status --sim --json | sed -n 's/.*"mem_limit":\([0-9]*\).*/\1/p')" $((300 * MiB))

say "4. inside the container, the GPU looks like its slice"
"$vgpu" run --sim -- "$vgpu" smi
wait "$holder"
holder=""
check "first workload's report (JSON)" "$(json "$work/first.out" allocated_bytes)" $((200 * MiB))
echo
echo "demo: all steps behaved as expected"

#!/usr/bin/env bash
# tests/gpu/lent-machine.sh -- everything a session does with a borrowed GPU
# machine, in one run: device time is scarce and each start costs minutes,
# so the checks, the benchmarks and the probes travel together.
#
#   machine.txt  what the machine is (GPU, driver, kernel, Python packages)
#   run.log      tests/gpu/run.sh: the isolation checks and the SM table
#   bench.log    bench/run-hook-bench.sh --real: hook and launch cost on
#                NVIDIA's driver, with and without libvgpu, in one run; and
#                vgpu-bench-timing: the driver's event, kernel and round-trip
#                times, to set against the simulator's h200 profile
#   probe.log    what NVML and nvidia-smi report for a process that
#                libvgpu charged a known amount (the node agent's backstop
#                compares the two), and the sliced views under the preload
#
# Each part has its own time limit, so one that hangs does not take the
# others' results with it. Binaries come from the build here (libvgpu.so
# and the CLI need libc alone; vgpu-burn and the benchmarks need only
# libcuda.so.1), so the machine needs no build tools.
#
# usage: bash tests/gpu/lent-machine.sh OUTDIR     (after make; env VGPU_BUILD_DIR)

set -uo pipefail

probes_only=0
if [ "${1:-}" = --probes ]; then probes_only=1; shift; fi # the script runs its probes so, under timeout
if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: bash tests/gpu/lent-machine.sh OUTDIR"
  [ $# -eq 1 ] && exit 0
  exit 2
fi
out=$1
mkdir -p "$out" || exit 1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${VGPU_BUILD_DIR:-$root/build}
cd "$root" || exit 1

# shellcheck source=tests/gpu/real_driver.sh
source "$root/tests/gpu/real_driver.sh"
vg_real_driver_only

describe_machine() {
  uname -a
  nvidia-smi -L
  head -n 1 /proc/driver/nvidia/version 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  ldd --version | head -n 1
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -c 'import cupy; print("cupy", cupy.__version__)'
  python3 -c 'import jax; print("jax", jax.__version__)'
  ldd "$build/bin/vgpu-burn" | grep libcuda
}

run_benchmarks() {
  timeout 60 bash bench/run-hook-bench.sh --real --runs 3 --alloc-iters 5000
  echo
  timeout 45 bash bench/run-hook-bench.sh --real --launch --runs 3 --iters 50000
  echo
  echo "vgpu-bench-timing on NVIDIA's driver (the simulator's h200 profile: event 1500 ns,"
  echo "small kernel 8100 ns, big 324000 ns, launch call 3200 ns; src/sim/sim_config.c)"
  timeout 30 "$build/bin/vgpu-bench-timing" --json
}

# wait_for FILE PATTERN PID : up to 30 s for PATTERN to appear in FILE,
# while process PID lives.
wait_for() {
  local i
  for ((i = 0; i < 300; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# nvml_processes : every compute process NVML lists, with its memory.
nvml_processes() {
  python3 - <<'PY'
import pynvml
pynvml.nvmlInit()
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
        used = p.usedGpuMemory
        print(f"  nvml gpu {i} pid {p.pid} usedGpuMemory {used if used is None else used >> 20} MiB")
PY
}

# probe_holder TAG PRELOAD : vgpu-burn holds 1 GiB (limit 2g under the
# preload); print what NVML, nvidia-smi and vgpu status say meanwhile.
probe_holder() {
  local tag=$1 preload=$2 cache=$tmp/probe.$1.cache pid
  rm -f "$cache"
  local envs=(CUDA_DEVICE_MEMORY_SHARED_CACHE="$cache")
  [ "$preload" = yes ] && envs+=(LD_PRELOAD="$build/lib/libvgpu.so" CUDA_DEVICE_MEMORY_LIMIT=2g)
  env "${envs[@]}" "$build/bin/vgpu-burn" --alloc 1g --chunk 64m --touch --hold 6 >"$tmp/holder.$tag" 2>&1 &
  pid=$!
  echo "== a process holding 1 GiB (64 MiB chunks, touched), preload: $preload; its pid $pid"
  if wait_for "$tmp/holder.$tag" '^holding' "$pid"; then
    nvml_processes
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | sed 's/^/  nvidia-smi: /'
    [ "$preload" = yes ] && "$build/bin/vgpu" status --cache "$cache" | sed 's/^/  vgpu status: /'
  else
    echo "  the holder did not start:"
    sed 's/^/  | /' "$tmp/holder.$tag"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

# probe_two_containers : two regions (containers) on the GPU, each with a
# holder; what nvidia-smi and vgpu smi show inside one of them, and which
# NVML process calls nvidia-smi resolves (libvgpu hooks the compute list).
probe_two_containers() {
  local a=$tmp/probe.a.cache b=$tmp/probe.b.cache pa pb
  local in_a=(env LD_PRELOAD="$build/lib/libvgpu.so" CUDA_DEVICE_MEMORY_SHARED_CACHE="$a" CUDA_DEVICE_MEMORY_LIMIT=4g)
  "${in_a[@]}" "$build/bin/vgpu-burn" --alloc 1g --chunk 64m --hold 15 >"$tmp/holder.a" 2>&1 &
  pa=$!
  env LD_PRELOAD="$build/lib/libvgpu.so" CUDA_DEVICE_MEMORY_SHARED_CACHE="$b" CUDA_DEVICE_MEMORY_LIMIT=4g \
    "$build/bin/vgpu-burn" --alloc 512m --chunk 64m --hold 15 >"$tmp/holder.b" 2>&1 &
  pb=$!
  echo "== two containers: A (pid $pa, 1 GiB of a 4 GiB limit) and B (pid $pb, 512 MiB)"
  if wait_for "$tmp/holder.a" '^holding' "$pa" && wait_for "$tmp/holder.b" '^holding' "$pb"; then
    echo "-- nvidia-smi on the host"
    nvidia-smi
    echo "-- nvidia-smi in A (LD_PRELOAD=libvgpu.so, A's region)"
    "${in_a[@]}" nvidia-smi
    echo "-- vgpu smi in A (the simulated driver's nvidia-smi stand-in, here over NVIDIA's NVML)"
    "${in_a[@]}" "$build/bin/vgpu" smi
    echo "-- vgpu smi on the host"
    "$build/bin/vgpu" smi
    echo "-- the NVML process calls nvidia-smi resolves in A"
    "${in_a[@]}" LD_DEBUG=symbols nvidia-smi 2>&1 >/dev/null |
      grep -o 'symbol=nvml[A-Za-z0-9_]*Process[A-Za-z0-9_]*' | sort -u
  else
    echo "  a holder did not start:"
    sed 's/^/  | /' "$tmp/holder.a" "$tmp/holder.b"
  fi
  kill "$pa" "$pb" 2>/dev/null
  wait "$pa" "$pb" 2>/dev/null
}

# probe_pid_namespace : a holder inside a new pid namespace (as in a pod)
# and a neighbour outside it: under which pids NVML and NVIDIA's nvidia-smi
# list them inside and outside the namespace (does the driver translate and
# leave out?), and what vgpu status reads inside (docs/status.md).
probe_pid_namespace() {
  local cache=$tmp/probe.ns.cache out=$tmp/ns-neighbour nb
  env LD_PRELOAD="$build/lib/libvgpu.so" CUDA_DEVICE_MEMORY_SHARED_CACHE="$tmp/probe.nsb.cache" \
    CUDA_DEVICE_MEMORY_LIMIT=2g "$build/bin/vgpu-burn" --alloc 512m --chunk 64m --hold 12 >"$out" 2>&1 &
  nb=$!
  wait_for "$out" '^holding' "$nb"
  echo "== a holder in a new pid namespace (unshare --pid --fork --mount-proc); a neighbour outside, pid $nb"
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --pid --fork --mount-proc env LD_PRELOAD="$build/lib/libvgpu.so" \
    CUDA_DEVICE_MEMORY_SHARED_CACHE="$cache" CUDA_DEVICE_MEMORY_LIMIT=2g B="$build" bash -c '
      "$B/bin/vgpu-burn" --alloc 1g --chunk 64m --hold 8 >/tmp/vgpu-ns-holder 2>&1 &
      h=$!
      for i in $(seq 100); do grep -q ^holding /tmp/vgpu-ns-holder && break; sleep 0.1; done
      echo "-- inside: holder pid $h; NVML lists (no preload):"
      env -u LD_PRELOAD python3 -c "import pynvml as n; n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0); print([(p.pid, p.usedGpuMemory >> 20) for p in n.nvmlDeviceGetComputeRunningProcesses(h)])"
      echo "-- inside: NVIDIA nvidia-smi, no preload, then under the preload"
      env -u LD_PRELOAD nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
      nvidia-smi | tail -n 4
      echo "-- inside: vgpu status"
      "$B/bin/vgpu" status
      wait "$h"' &
  local ns=$!
  sleep 4
  echo "-- outside: NVML lists"
  nvml_processes
  wait "$ns"
  kill "$nb" 2>/dev/null
  wait "$nb" 2>/dev/null
  rm -f /tmp/vgpu-ns-holder
}

run_probes() {
  probe_pid_namespace
  probe_two_containers
  probe_holder plain no
  probe_holder preloaded yes
  echo "== nvidia-smi under the preload, CUDA_DEVICE_MEMORY_LIMIT=4g"
  env LD_PRELOAD="$build/lib/libvgpu.so" CUDA_DEVICE_MEMORY_LIMIT=4g \
    CUDA_DEVICE_MEMORY_SHARED_CACHE="$tmp/probe.smi.cache" nvidia-smi
  echo "== vgpu smi under the same limit"
  env CUDA_DEVICE_MEMORY_LIMIT=4g CUDA_DEVICE_MEMORY_SHARED_CACHE="$tmp/probe.smi.cache" \
    "$build/bin/vgpu" smi
  echo "== vgpu run --memory 2g --cores 50 -- vgpu-burn --seconds 2 (the CLI on the real driver)"
  "$build/bin/vgpu" run --memory 2g --cores 50 --cache "$tmp/probe.run.cache" -- \
    "$build/bin/vgpu-burn" --meminfo --seconds 2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-lent.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ $probes_only = 1 ]; then
  run_probes
  exit
fi

# The probes run before the benchmarks: when the lent time is short, what
# is new is seen first (the benchmarks are comparisons already on record).
describe_machine >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
timeout 360 bash tests/gpu/run.sh 2>&1 | tee "$out/run.log"
timeout 90 bash "${BASH_SOURCE[0]}" --probes "$out" >"$out/probe.log" 2>&1
cat "$out/probe.log"
run_benchmarks 2>&1 | tee "$out/bench.log"

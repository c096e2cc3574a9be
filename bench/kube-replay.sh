#!/usr/bin/env bash
# bench/kube-replay.sh -- the Alibaba GPU trace through the real kube-scheduler 1.20.2 with
# vgpu-scheduler as deployed, beside vgpu-replay's in-process vgpu and fgd on the very same nodes
# and pods (issue 28, item 4; docs/placement.md). For each seed: a throwaway control plane (etcd,
# kube-apiserver, kube-scheduler; no kubelet) under its own state dir, one Node per trace node of
# the seed's subset, the seed's pods in arrival order until 100 % of the GPU capacity; prints a
# table and ends with one JSON line (kube_unallocated_pct_at_100, inproc_vgpu_unallocated_pct_at_100,
# inproc_fgd_unallocated_pct_at_100, pods_per_s, bind_p99_ms, ...). Stops what it started and
# removes its state, also on failure or Ctrl-C. Needs root; waits while another cluster runs.
#
#   bash bench/kube-replay.sh --nodes N --seeds A-B [--trace TRACE] [--trace-dir DIR] [OPTION...]
#
# The trace folder is --trace-dir, else $VGPU_TRACE_DIR, else ../shared/data/alibaba-gpu-v2023 next
# to the repository. Kubernetes comes from the e2e's cache (scripts/e2e/build-k8s.sh builds it when
# missing). All options: bash bench/kube-replay.sh --help (bench/kube_replay.py).
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    -h | --help) exec /usr/bin/python3 bench/kube_replay.py --help ;;
    --trace-dir) export VGPU_TRACE_DIR=${args[i + 1]:-} ;;
    --trace-dir=*) export VGPU_TRACE_DIR=${args[i]#--trace-dir=} ;;
  esac
done
# shellcheck source=bench/trace_dir.sh
source bench/trace_dir.sh
BUILD=${VGPU_BUILD_DIR:-build}
if [ ! -x "$BUILD/bin/vgpu-replay" ] || [ ! -x "$BUILD/bin/vgpu-scheduler" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j "$(nproc)" --target vgpu-replay vgpu-scheduler >/dev/null
fi
exec /usr/bin/python3 bench/kube_replay.py --build "$BUILD" "$@" --trace-dir "$DATA"

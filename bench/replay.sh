#!/usr/bin/env bash
# bench/replay.sh -- the FGD paper's placement benchmark (docs/placement.md):
# every policy of vgpu-replay on every pod trace of the Alibaba GPU data set,
# seeds 42-51, workload tuned to 130 % of GPU capacity. Prints one table:
# mean unallocated GPU % at arrived = 100 %, the paper's number where it has
# one, and the wall time of each 10-seed replay. See docs/placement.md.
#   bash bench/replay.sh                      all traces, all policies
#   TRACES="default" POLICIES="fgd" bash bench/replay.sh
# The trace folder is $VGPU_TRACE_DIR (or $DATA), else
# ../shared/data/alibaba-gpu-v2023 next to the repository, else the synthetic
# sample in bench/sample-trace (bench/trace_dir.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/trace_dir.sh
source bench/trace_dir.sh
SEEDS=${SEEDS:-42-51}
BIN=build/bin/vgpu-replay
[ -x "$BIN" ] || { cmake -S . -B build >/dev/null && cmake --build build --target vgpu-replay >/dev/null; }
POLICIES=${POLICIES:-$("$BIN" --help | sed -n 's/^  policies: \(.*\) (default.*/\1/p')}
TRACES=${TRACES:-$(ls "$DATA" | sed -n 's/^openb_pod_list_\(.*\)\.csv$/\1/p' | sort)}

# The paper's artifact results (mean of 10 seeds at arrived = 100 %); none for the synthetic sample.
paper() {
  [ "$SAMPLE_TRACE" = 0 ] || { echo "-"; return; }
  case "$1/$2" in
    default/bestfit) echo 7.14 ;; default/fgd) echo 4.77 ;;
    gpushare40/bestfit) echo 8.56 ;; gpushare40/fgd) echo 6.04 ;;
    gpuspec10/bestfit) echo 6.90 ;; gpuspec10/fgd) echo 5.34 ;;
    multigpu20/bestfit) echo 6.27 ;; multigpu20/fgd) echo 4.47 ;;
    *) echo "-" ;;
  esac
}

printf "%-12s %-10s %14s %8s %8s %9s\n" trace policy "unallocated%" sd paper seconds
for t in $TRACES; do
  for p in $POLICIES; do
    json=$("$BIN" --nodes "$DATA/openb_node_list_gpu_node.csv" --pods "$DATA/openb_pod_list_$t.csv" \
      --policy "$p" --seeds "$SEEDS" --json | tail -n 1)
    field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$json"; }
    printf "%-12s %-10s %14.2f %8.2f %8s %9.1f\n" "$t" "$p" "$(field unallocated_pct_at_100)" \
      "$(field sd_at_100)" "$(paper "$t" "$p")" "$(field seconds)"
  done
done

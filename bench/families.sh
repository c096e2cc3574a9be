#!/usr/bin/env bash
# bench/families.sh -- placement on workload families (docs/placement.md):
# the default Alibaba trace resampled so that one property of the mix varies
# at a time (vgpu-replay --mix, src/scheduler/mix.c), each point replayed
# with every policy. Prints one table, family x point x policy: mean
# unallocated GPU % at arrived = 100 % and its sd, and for each policy after
# the first its difference to FGD.
#   bash bench/families.sh                       every family, FGD and vgpu
#   SEEDS=52-61 POLICIES="fgd vgpu bestfit" FAMILIES="multigpu gpuspec" bash bench/families.sh
# Points: multigpu/gpushare/gpuspec = % of the GPU request carried by
# multi-GPU / sharing / model-constrained pods; cpu = % of pods CPU-only.
# The draws come from all four pod traces (the pool) with MIX_SEED (default 1).
# The trace folder is $VGPU_TRACE_DIR (or $DATA), else
# ../shared/data/alibaba-gpu-v2023 next to the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/trace_dir.sh
source bench/trace_dir.sh
SEEDS=${SEEDS:-42-51}
MIX_SEED=${MIX_SEED:-1}
POLICIES=${POLICIES:-fgd vgpu}
FAMILIES=${FAMILIES:-multigpu gpushare gpuspec cpu}
BIN=build/bin/vgpu-replay
[ -x "$BIN" ] || { cmake -S . -B build >/dev/null && cmake --build build --target vgpu-replay >/dev/null; }

points() {
  case "$1" in
    multigpu) echo "${MULTIGPU_POINTS:-15 20 25 30 40 50 60}" ;;
    gpushare) echo "${GPUSHARE_POINTS:-20 40 60 80 100}" ;;
    gpuspec) echo "${GPUSPEC_POINTS:-5 10 15 20 30 40}" ;;
    cpu) echo "${CPU_POINTS:-5 10 20 30}" ;;
    *) echo "bench/families.sh: unknown family '$1'" >&2; exit 2 ;;
  esac
}

pools=()
for t in "$DATA"/openb_pod_list_*.csv; do pools+=(--pool "$t"); done

echo "families: seeds $SEEDS, mix seed $MIX_SEED, tune 1.3; unallocated GPU % at arrived = 100 %"
printf "%-9s %5s %-8s %8s %6s %8s %8s\n" family point policy unalloc% sd "-fgd" seconds
for f in $FAMILIES; do
  for pt in $(points "$f"); do
    fgd=""
    for p in $POLICIES; do
      json=$("$BIN" --nodes "$DATA/openb_node_list_gpu_node.csv" --pods "$DATA/openb_pod_list_default.csv" \
        "${pools[@]}" --mix "$f=$pt" --mix-seed "$MIX_SEED" --policy "$p" --seeds "$SEEDS" --json | tail -n 1)
      field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$json"; }
      u=$(field unallocated_pct_at_100)
      [ "$p" = fgd ] && fgd=$u
      d=-
      [ "$p" != fgd ] && [ -n "$fgd" ] && d=$(awk -v a="$u" -v b="$fgd" 'BEGIN { printf "%+.2f", a - b }')
      printf "%-9s %5s %-8s %8.2f %6.2f %8s %8.1f\n" "$f" "$pt" "$p" "$u" "$(field sd_at_100)" "$d" "$(field seconds)"
    done
  done
done

#!/usr/bin/env bash
# bench/families.sh -- placement on workload families (docs/placement.md):
# the default Alibaba trace resampled so that one property of the mix varies
# at a time (vgpu-replay --mix, src/scheduler/mix.c), each point replayed
# with every policy. Prints one table, family x point x policy: mean
# unallocated GPU % at arrived = 100 % and its sd, and for each policy after
# the first its mean per-seed difference to FGD and that mean's standard error.
#   bash bench/families.sh                       every family, FGD and vgpu
#   SEEDS=52-61 POLICIES="fgd vgpu bestfit" FAMILIES="multigpu gpuspec" bash bench/families.sh
#   MIX_SEED=each SEEDS=200-229 bash bench/families.sh    a pod list per seed
# Points: multigpu/gpushare/gpuspec = % of the GPU request carried by
# multi-GPU / sharing / model-constrained pods; cpu = % of pods CPU-only.
# The draws come from all four pod traces (the pool) with MIX_SEED (default 1):
# one pod list per point, replayed in each seed's order. MIX_SEED=each draws
# a pod list per seed (seed s: --mix-seed s --seeds s-s), so the mean is over
# the family point's pod lists as well as the orders, and a held-out seed
# range is a held-out set of pod lists too.
# "se" is the standard error of the mean per-seed difference to FGD (the same
# seed, so the same order and pod list, under both policies).
# The trace folder is $VGPU_TRACE_DIR (or $DATA), else
# ../shared/data/alibaba-gpu-v2023 next to the repository, else the synthetic
# sample in bench/sample-trace (bench/trace_dir.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/trace_dir.sh
source bench/trace_dir.sh
SEEDS=${SEEDS:-42-51}
MIX_SEED=${MIX_SEED:-1}
POLICIES=${POLICIES:-fgd vgpu}
FAMILIES=${FAMILIES:-multigpu gpushare gpuspec cpu}
seed_lo=${SEEDS%-*} seed_hi=${SEEDS#*-}
BIN=${VGPU_REPLAY:-build/bin/vgpu-replay}
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

# One policy at the current point: "seed unallocated%" lines, then
# "seconds S" (the replay's own time, summed over its invocations).
replay() {
  local common=(--nodes "$DATA/openb_node_list_gpu_node.csv" --pods "$DATA/openb_pod_list_default.csv"
    "${pools[@]}" --mix "$1=$2" --policy "$3")
  if [ "$MIX_SEED" = each ]; then
    seq "$seed_lo" "$seed_hi" | xargs -P "$(nproc)" -I{} "$BIN" "${common[@]}" --mix-seed {} --seeds {}-{} --json
  else
    "$BIN" "${common[@]}" --mix-seed "$MIX_SEED" --seeds "$SEEDS" --json
  fi | sed -n -e 's/^seed \([0-9]*\):.* arrived: \([0-9.]*\)%$/\1 \2/p' \
    -e 's/.*"seconds":\([0-9.]*\).*/seconds \1/p'
}

# mean, sd, and (given FGD's lines) the mean difference to FGD and its se.
stats() {
  awk -v fgd="${2:-}" 'BEGIN { while (fgd != "" && (getline l < fgd) > 0) { split(l, a, " "); if (a[1] != "seconds") f[a[1]] = a[2] } }
    $1 == "seconds" { t += $2; next }
    { n++; s += $2; ss += $2 * $2; if ($1 in f) { d = $2 - f[$1]; m++; ds += d; dss += d * d } }
    function root(x) { return x > 0 ? sqrt(x) : 0 }  # rounding can take a 0 below 0
    END {
      mean = s / n; sd = n > 1 ? root((ss - n * mean * mean) / (n - 1)) : 0
      dm = "-"; se = "-"
      if (m > 0) { dmean = ds / m; dm = sprintf("%+.2f", dmean) }
      if (m > 1) se = sprintf("%.3f", root((dss - m * dmean * dmean) / (m - 1) / m))
      printf "%8.2f %6.2f %8s %6s %8.1f\n", mean, sd, dm, se, t
    }' "$1"
}

nseeds=$((seed_hi - seed_lo + 1))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "families: seeds $SEEDS, mix seed $MIX_SEED, tune 1.3; unallocated GPU % at arrived = 100 %"
printf "%-9s %5s %-8s %8s %6s %8s %6s %8s\n" family point policy unalloc% sd "-fgd" se seconds
for f in $FAMILIES; do
  for pt in $(points "$f"); do
    rm -f "$tmp/fgd"
    for p in $POLICIES; do
      replay "$f" "$pt" "$p" | sort -n >"$tmp/$p"
      got=$(grep -vc '^seconds' "$tmp/$p" || true)
      if [ "$got" -ne "$nseeds" ]; then
        echo "bench/families.sh: $f=$pt $p: $got of $nseeds seeds have a value at 100 % arrived; the mean is over those" >&2
      fi
      ref=""
      if [ "$p" != fgd ] && [ -s "$tmp/fgd" ]; then ref=$tmp/fgd; fi
      printf "%-9s %5s %-8s %s\n" "$f" "$pt" "$p" "$(stats "$tmp/$p" "$ref")"
    done
  done
done

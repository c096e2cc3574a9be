#!/usr/bin/env bash
# test_families_script.sh -- bench/families.sh on a tiny trace folder: its
# table's mean, difference to FGD and standard error are those of the
# per-seed results vgpu-replay gives directly, with one pod list for every
# seed (MIX_SEED=N) and with a pod list per seed (MIX_SEED=each), and the
# two modes do replay different pod lists.
# usage: test_families_script.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1
replay=$2/bin/vgpu-replay
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Eight 8-GPU nodes and twelve 2-GPU ones; 400 pods of 1 GPU, shares of six
# sizes and CPU-only pods, with CPU requests that vary; multi-GPU pods in
# the pool only, so multigpu=20 must draw them. Pods of 2 GPUs at most: every
# seed has an event within a point of 100 % arrived.
nodes=$tmp/openb_node_list_gpu_node.csv
printf 'sn,cpu_milli,memory_mib,gpu,model\n' >"$nodes"
for i in 0 1 2 3 4 5 6 7; do printf 'n%d,96000,393216,8,G2\n' "$i" >>"$nodes"; done
for i in $(seq 8 19); do printf 'n%d,32000,262144,2,T4\n' "$i" >>"$nodes"; done
{
  printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n'
  for i in $(seq 160); do printf 'p%d,%d,1024,1,1000,\n' "$i" $((2000 + 2000 * (i % 7))); done
  for i in $(seq 200); do printf 's%d,%d,1024,1,%d,\n' "$i" $((1000 + 1000 * (i % 5))) $((150 + 110 * (i % 7))); done
  for i in $(seq 40); do printf 'c%d,%d,1024,0,0,\n' "$i" $((4000 + 4000 * (i % 3))); done
} >"$tmp/openb_pod_list_default.csv"
{
  printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n'
  for i in 1 2 3 4 5 6; do printf 'm%d,%d,1024,2,1000,\n' "$i" $((10000 * i - 6000)); done
} >"$tmp/openb_pod_list_multi.csv"

pools=()
for t in "$tmp"/openb_pod_list_*.csv; do pools+=(--pool "$t"); done
# vgpu-replay on the multigpu=20 point of the tiny trace, with ARGS.
replay_mix() {
  "$replay" --nodes "$nodes" --pods "$tmp/openb_pod_list_default.csv" "${pools[@]}" \
    --mix multigpu=20 "$@"
}
# One seed's unallocated % at 100 % arrived, straight from vgpu-replay.
direct() { # POLICY MIX_SEED SEED
  replay_mix --policy "$1" --mix-seed "$2" --seeds "$3-$3" |
    sed -n 's/^seed [0-9]*:.* arrived: \([0-9.]*\)%$/\1/p'
}
# families.sh's table for MIX_SEED, into $tmp/table.MIX_SEED.
table() { # MIX_SEED
  VGPU_TRACE_DIR=$tmp VGPU_REPLAY=$replay FAMILIES=multigpu MULTIGPU_POINTS=20 SEEDS=1-4 \
    POLICIES="fgd vgpu" MIX_SEED=$1 bash "$src/bench/families.sh" >"$tmp/table.$1"
}
# The row of POLICY in the table made for MIX_SEED.
row() { # MIX_SEED POLICY
  awk -v p="$2" '$3 == p' "$tmp/table.$1"
}
# mean, mean difference and its standard error of the direct results.
expect() { # MIX_SEED ("each" or a number)
  for s in 1 2 3 4; do
    m=$1
    [ "$m" = each ] && m=$s
    echo "$(direct fgd "$m" "$s") $(direct vgpu "$m" "$s")"
  done | awk '{ f += $1; v += $2; d = $2 - $1; ds += d; dss += d * d; n++ }
    END { dm = ds / n; printf "%.2f %.2f %+.2f %.3f\n", f / n, v / n, dm, sqrt((dss - n * dm * dm) / (n - 1) / n) }'
}

for mode in 3 each; do
  table "$mode"
  fgd=$(row "$mode" fgd)
  vgpu=$(row "$mode" vgpu)
  if [ -z "$fgd" ] || [ -z "$vgpu" ]; then
    fail "MIX_SEED=$mode: no fgd/vgpu rows ('$fgd' '$vgpu')"
    continue
  fi
  got="$(awk '{print $4}' <<<"$fgd") $(awk '{print $4, $6, $7}' <<<"$vgpu")"
  want=$(expect "$mode")
  [ "$got" = "$want" ] || fail "MIX_SEED=$mode: table says '$got' (fgd, vgpu, -fgd, se), replays '$want'"
done

# A pod list per seed is not one list for every seed: the mix seeds write
# different lists, and (with these pods) the two modes' tables differ.
for m in 2 3; do replay_mix --mix-seed "$m" --seeds 1-1 --write-pods "$tmp/l$m.csv" >/dev/null; done
! cmp -s "$tmp/l2.csv" "$tmp/l3.csv" || fail "mix seeds 2 and 3 wrote the same pod list"
[ "$(row 3 fgd)" != "$(row each fgd)" ] || fail "MIX_SEED=3 and MIX_SEED=each gave the same fgd row"

# A bad mix seed stops the script with vgpu-replay's reason.
err=$(VGPU_TRACE_DIR=$tmp VGPU_REPLAY=$replay FAMILIES=multigpu MULTIGPU_POINTS=20 SEEDS=1-2 \
  MIX_SEED=x bash "$src/bench/families.sh" 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 0 ] || ! grep -qF "bad --mix-seed 'x'" <<<"$err"; then fail "MIX_SEED=x: exit $rc, '$err'"; fi

# A seed with no event near 100 % arrived (pods of 3 GPUs on one 8-GPU node
# step past it) is left out of the mean, and the script says so.
mkdir "$tmp/steps"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,G2\n' >"$tmp/steps/openb_node_list_gpu_node.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nm1,1000,1024,3,1000,\nm2,1000,1024,3,1000,\np1,1000,1024,1,1000,\n' \
  >"$tmp/steps/openb_pod_list_default.csv"
err=$(VGPU_TRACE_DIR=$tmp/steps VGPU_REPLAY=$replay FAMILIES=multigpu MULTIGPU_POINTS=80 SEEDS=4-5 \
  POLICIES=fgd MIX_SEED=each bash "$src/bench/families.sh" 2>&1 >"$tmp/steps/table")
want="multigpu=80 fgd: 1 of 2 seeds have a value at 100 % arrived; the mean is over those"
grep -qF "$want" <<<"$err" || fail "seed without a value: stderr '$err', want '$want'"
grep -q '^multigpu *80 fgd *0.00 ' "$tmp/steps/table" || fail "seed without a value: $(cat "$tmp/steps/table")"

[ $failures -eq 0 ] && echo "test_families_script: all passed"
exit $((failures > 0))

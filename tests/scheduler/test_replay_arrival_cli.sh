#!/usr/bin/env bash
# test_replay_arrival_cli.sh -- vgpu-replay's options for the real scheduler's
# benchmark (bench/kube-replay.sh) on a tiny hand-written trace: --node-count
# takes a seeded subset, --write-nodes / --write-arrival save one seed's nodes
# and arrival list (shares whole percents, cut where the GPU request reaches
# 100 % of the subset's capacity), --in-order places that list as it is and
# reports the figure after the last pod; bad combinations are refused.
# usage: test_replay_arrival_cli.sh BUILD_DIR
# shellcheck source=tests/scheduler/replay_cli.sh
source "$(dirname "$0")/replay_cli.sh"

printf 'sn,cpu_milli,memory_mib,gpu,model\n' >"$tmp/nodes.csv"
for i in $(seq 0 9); do printf 'n%d,96000,393216,%d,G2\n' "$i" $((i % 4 + 1)) >>"$tmp/nodes.csv"; done
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n' >"$tmp/pods.csv"
for i in $(seq 20); do printf 'p%d,8000,1024,1,1000,\n' "$i" >>"$tmp/pods.csv"; done
for i in $(seq 20); do printf 's%d,4000,1024,1,%d,\n' "$i" $((i * 37 + 5)) >>"$tmp/pods.csv"; done
for i in $(seq 5); do printf 'c%d,4000,1024,0,0,\n' "$i" >>"$tmp/pods.csv"; done

run() { "$replay" --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" "$@"; }

out=$(run --seeds 7 --node-count 4 --write-nodes "$tmp/sub.csv" --write-arrival "$tmp/arr.csv" --json 2>&1) ||
  fail "--write-arrival exited $?: $out"
[ "$(tail -n +2 "$tmp/sub.csv" | wc -l)" -eq 4 ] || fail "--node-count 4 wrote $(cat "$tmp/sub.csv")"
# The subset's rows are rows of the node list, in its order.
grep -Fxf "$tmp/sub.csv" "$tmp/nodes.csv" | cmp -s - "$tmp/sub.csv" || fail "subset rows not the list's: $(cat "$tmp/sub.csv")"
run --seeds 7 --node-count 4 --write-nodes "$tmp/sub2.csv" >/dev/null 2>&1
cmp -s "$tmp/sub.csv" "$tmp/sub2.csv" || fail "seed 7 drew two different subsets"
differs=0
for s in 1 2 3 4 5 6; do
  run --seeds $s --node-count 4 --write-nodes "$tmp/sub3.csv" >/dev/null 2>&1
  cmp -s "$tmp/sub.csv" "$tmp/sub3.csv" || differs=1
done
[ $differs -eq 1 ] || fail "seeds 1-6 all drew seed 7's subset"
grep -q '"node_count":4,' <<<"$out" || fail "JSON lacks node_count: $(tail -n 1 <<<"$out")"

# The arrival list: whole percents, cut at the first pod reaching the capacity.
cap=$(awk -F, 'NR > 1 { s += $4 * 1000 } END { print s }' "$tmp/sub.csv")
check=$(awk -F, -v cap="$cap" 'NR > 1 {
    if ($4 == 1 && $5 < 1000 && $5 % 10) print "share " $5 " not a multiple of 10";
    if (sum >= cap) print "pod " $1 " after the capacity (" sum " of " cap ")";
    sum += $4 * $5 }
  END { if (sum < cap) print "the list stops at " sum " of " cap }' "$tmp/arr.csv")
[ -z "$check" ] || fail "arrival list: $check"
n=$(($(wc -l <"$tmp/arr.csv") - 1))
grep -q "^arrival list of seed 7: $n pods, GPU request 1[0-9][0-9]\.[0-9]*% of $cap milli-GPU on 4 nodes$" <<<"$out" ||
  fail "no 'arrival list of seed 7: $n pods' line: $out"

# In order: every pod of the list, the figure after the last one.
json=$("$replay" --nodes "$tmp/sub.csv" --pods "$tmp/arr.csv" --seeds 1-3 --in-order --json | tail -n 1)
python3 - "$json" "$n" <<'PY' || fail "--in-order JSON: $json"
import json, sys
j = json.loads(sys.argv[1])
assert j["in_order"] is True and len(j["after_last"]) == 3, j
assert abs(sum(j["after_last"]) / 3 - j["unallocated_pct_after_last"]) < 1e-3, j
assert all(0 <= x <= 100 for x in j["after_last"]), j
PY
out=$("$replay" --nodes "$tmp/sub.csv" --pods "$tmp/arr.csv" --seeds 1 --in-order)
grep -q "^seed 1: $n pods in the given order, [0-9]* placed, [0-9]* failed; unallocated GPU after the last pod (arrived 1[0-9][0-9]\.[0-9][0-9]%): [0-9.]*%$" <<<"$out" ||
  fail "--in-order's seed line: $out"

refused() { # WANT ARGS...: exit 2 and WANT on stderr
  local want=$1 err rc
  shift
  err=$(run "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || ! grep -qF -- "$want" <<<"$err"; then fail "'$*': exit $rc, stderr '$err'"; fi
}
refused "--write-arrival and --write-nodes take one seed" --seeds 1-2 --write-arrival "$tmp/x.csv"
refused "--write-arrival and --write-nodes take one seed" --seeds 1-2 --write-nodes "$tmp/x.csv"
refused "--in-order places --pods as given" --in-order --tune 1.0
refused "--in-order places --pods as given" --in-order --mix cpu=10
refused "--in-order places --pods as given" --in-order --seeds 1 --write-arrival "$tmp/x.csv"
refused "bad --node-count 'x' (1 or more nodes)" --node-count x
refused "bad --node-count '0' (1 or more nodes)" --node-count 0
err=$(run --seeds 1 --node-count 11 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 1 ] || ! grep -qF "a subset of 11 nodes of a cluster of 10" <<<"$err"; then fail "--node-count 11: exit $rc, '$err'"; fi

finish test_replay_arrival_cli

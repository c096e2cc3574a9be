#!/usr/bin/env bash
# test_replay_mix_cli.sh -- vgpu-replay's --mix on a tiny hand-written trace:
# the family point is reached and reported (text and JSON), --write-pods
# saves a list that replays to the same result, the same mix seed gives the
# same list, and bad combinations are refused with a reason and exit 2.
# usage: test_replay_mix_cli.sh BUILD_DIR
# shellcheck source=tests/scheduler/replay_cli.sh
source "$(dirname "$0")/replay_cli.sh"

printf 'sn,cpu_milli,memory_mib,gpu,model\n' >"$tmp/nodes.csv"
for i in 0 1 2 3; do printf 'n%d,96000,393216,8,G2\n' "$i" >>"$tmp/nodes.csv"; done
printf 'n4,104000,524288,2,T4\nn5,104000,524288,2,T4\n' >>"$tmp/nodes.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n' >"$tmp/base.csv"
for i in $(seq 20); do printf 'p%d,8000,1024,1,1000,\n' "$i" >>"$tmp/base.csv"; done
for i in $(seq 10); do printf 's%d,4000,1024,1,500,\n' "$i" >>"$tmp/base.csv"; done
for i in $(seq 5); do printf 'c%d,4000,1024,0,0,\n' "$i" >>"$tmp/base.csv"; done
cp "$tmp/base.csv" "$tmp/pool.csv"
printf 'm1,32000,1024,4,1000,\nm2,64000,1024,8,1000,\nt1,8000,1024,1,1000,T4\n' >>"$tmp/pool.csv"

run() { "$replay" --nodes "$tmp/nodes.csv" --pods "$tmp/base.csv" --seeds 1-2 "$@"; }

out=$(run --pool "$tmp/pool.csv" --mix multigpu=40 --write-pods "$tmp/mixed.csv" --json 2>&1) ||
  fail "multigpu=40 exited $?: $out"
grep -q '^mix multigpu=40 (mix seed 1): [0-9]* pods, measured 4[0-9]\.[0-9]%$' <<<"$out" ||
  fail "no 'mix multigpu=40 ... measured 4x.x%' line: $out"
json=$(tail -n 1 <<<"$out")
grep -q '"mix":"multigpu=40","mix_seed":1,"mix_pods":[0-9]*,"mix_measured":4[0-9]\.[0-9]*,"curve"' <<<"$json" ||
  fail "JSON lacks the mix fields: $json"
grep -q '^target workload: .* on several GPUs (vgpu.s measure: ' <<<"$out" ||
  fail "no target workload line: $out"
# Too few pods for an event near 100 % arrived: JSON null, never nan.
python3 -c 'import json, sys; json.loads(sys.argv[1])' "$json" || fail "not JSON: $json"

# The saved list replays to the same curve as the mix it came from.
a=$(sed -n 's/.*"curve":\(.*\)/\1/p' <<<"$json")
b=$("$replay" --nodes "$tmp/nodes.csv" --pods "$tmp/mixed.csv" --seeds 1-2 --json | tail -n 1 |
  sed -n 's/.*"curve":\(.*\)/\1/p')
if [ -z "$a" ] || [ "$a" != "$b" ]; then fail "--write-pods list replays to '$b', the mix to '$a'"; fi

# One mix seed, one list; the constrained list names T4.
run --pool "$tmp/pool.csv" --mix gpuspec=30 --mix-seed 7 --write-pods "$tmp/s1.csv" >/dev/null 2>&1
run --pool "$tmp/pool.csv" --mix gpuspec=30 --mix-seed 7 --write-pods "$tmp/s2.csv" >/dev/null 2>&1
cmp -s "$tmp/s1.csv" "$tmp/s2.csv" || fail "the same --mix-seed wrote different lists"
grep -q ',T4$' "$tmp/s1.csv" || fail "gpuspec=30 pinned no pod to T4"

exits() { # RC WANT ARGS...: exit RC and WANT on stderr
  local want_rc=$1 want=$2 err rc
  shift 2
  err=$(run "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne "$want_rc" ] || ! grep -qF -- "$want" <<<"$err"; then
    fail "'$*': exit $rc, stderr '$err' (want $want_rc, '$want')"
  fi
}
refused() { exits 2 "$@"; } # WANT ARGS...: a bad command line
load_error() { exits 1 "$@"; } # WANT ARGS...: a file that cannot be loaded
refused "bad --mix 'multigpu': want FAMILY=PCT" --mix multigpu
refused "PCT must be a number from 0 to below 100" --mix cpu=100
refused "--pool and --write-pods go with --mix" --pool "$tmp/pool.csv"
refused "bad --mix-seed 'x' (a number)" --mix cpu=10 --mix-seed x
refused "unknown option '--mixx' (did you mean --mix?)" --mixx cpu=10
refused "unknown option '--mix-sed' (did you mean --mix-seed?)" --mix cpu=10 --mix-sed 3
refused "unexpected argument 'stray'" stray
refused "option '--pool' needs a value" --mix cpu=10 --pool
refused "bad --tune 'x' (0 < X <= 10)" --tune x

# A path option naming a directory says so (it read as "empty file"); an
# empty file still says empty.
load_error "$tmp: is a directory (expected a CSV file)" --pods "$tmp"
load_error "$tmp: is a directory (expected a CSV file)" --nodes "$tmp"
load_error "$tmp: is a directory (expected a CSV file)" --mix cpu=10 --pool "$tmp"
load_error "$tmp/none.csv: cannot open: No such file or directory" --pods "$tmp/none.csv"
: >"$tmp/empty.csv"
load_error "$tmp/empty.csv: empty file (expected a header line)" --pods "$tmp/empty.csv"
load_error "$tmp: Is a directory" --mix cpu=10 --pool "$tmp/pool.csv" --write-pods "$tmp"

out=$(run --mix gpuspec=20 2>&1)
rc=$?
if [ $rc -ne 1 ] || ! grep -qF "the pool has no model-constrained pods to draw from" <<<"$out"; then
  fail "gpuspec without constrained pods: exit $rc, '$out'"
fi

finish test_replay_mix_cli

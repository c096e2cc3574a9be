#!/usr/bin/env bash
# test_sample_trace.sh -- bench/sample-trace, the synthetic trace a fresh clone
# replays: bench/sample_trace.py writes exactly the committed files (so every
# row is ours, from its seed); bench/replay.sh in a tree with no trace folder
# replays it, says that it is synthetic and where the public trace is, and
# prints no paper numbers; a folder named by VGPU_TRACE_DIR wins over it, and
# one without pod traces still exits 2.
# usage: test_sample_trace.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

/usr/bin/python3 "$src/bench/sample_trace.py" "$tmp/gen" || fail "sample_trace.py failed"
for f in openb_node_list_gpu_node.csv openb_pod_list_default.csv; do
  cmp -s "$tmp/gen/$f" "$src/bench/sample-trace/$f" ||
    fail "bench/sample-trace/$f is not what bench/sample_trace.py writes"
done
grep -q -v '^synthetic-\|^sn,\|^name,' "$src"/bench/sample-trace/*.csv &&
  fail "a row of bench/sample-trace is not named synthetic-..."

# A fresh clone's shape: the repository with no ../shared next to it.
repo=$tmp/clone/repo
mkdir -p "$repo/build/bin"
cp -r "$src/bench" "$repo/"
ln -s "$build/bin/vgpu-replay" "$repo/build/bin/vgpu-replay"
(unset VGPU_TRACE_DIR DATA; SEEDS=42-43 POLICIES="fgd vgpu" bash "$repo/bench/replay.sh") \
  >"$tmp/out" 2>"$tmp/err" || fail "replay.sh without a trace folder failed: $(cat "$tmp/err")"
grep -q 'SYNTHETIC 400-pod sample' "$tmp/err" || fail "no synthetic-sample note: $(cat "$tmp/err")"
grep -q 'github.com/alibaba/clusterdata' "$tmp/err" || fail "the public trace is not named"
[ "$(grep -c '^default ' "$tmp/out")" = 2 ] || fail "not one row per policy: $(cat "$tmp/out")"
awk '$1 == "default" && ($3 + 0 <= 0 || $5 != "-") { bad = 1 } END { exit bad }' "$tmp/out" ||
  fail "a row has no result or shows a paper number: $(cat "$tmp/out")"

# VGPU_TRACE_DIR wins: a folder of our own making (one trace, "mine"), no note.
mkdir "$tmp/mine"
cp "$src/bench/sample-trace/openb_node_list_gpu_node.csv" "$tmp/mine/"
head -n 101 "$src/bench/sample-trace/openb_pod_list_default.csv" >"$tmp/mine/openb_pod_list_mine.csv"
VGPU_TRACE_DIR=$tmp/mine SEEDS=42-42 POLICIES=fgd bash "$repo/bench/replay.sh" >"$tmp/out" 2>"$tmp/err" ||
  fail "replay.sh with VGPU_TRACE_DIR failed: $(cat "$tmp/err")"
grep -q '^mine ' "$tmp/out" || fail "VGPU_TRACE_DIR's trace was not replayed: $(cat "$tmp/out")"
grep -q 'SYNTHETIC' "$tmp/err" && fail "the sample note with VGPU_TRACE_DIR set"

# A named folder without traces is an error, not the sample.
mkdir "$tmp/empty"
VGPU_TRACE_DIR=$tmp/empty bash "$repo/bench/replay.sh" >/dev/null 2>"$tmp/err"
[ $? = 2 ] || fail "an empty VGPU_TRACE_DIR did not exit 2"
grep -q 'cluster-trace-gpu-v2023' "$tmp/err" || fail "the empty-folder error does not name the public trace"

[ "$failures" = 0 ] && echo "test_sample_trace: PASS" && exit 0
echo "test_sample_trace: $failures failure(s)"
exit 1

#!/usr/bin/env bash
# test_readme.sh -- README.md's commands, run as written on the simulated GPU.
#
# The convention (README.md says it too): every ```sh or ```console block of README.md is
# preceded by a marker line,
#   <!-- readme-test: run -->            this test runs the block
#   <!-- readme-test: skip: REASON -->   it does not, for the reason given (a cluster, a synopsis)
# and a block without one fails the test, so that a new block gets a decision. Of a ```sh block
# every line is a command; of a ```console block the lines after "$ " (the rest is output).
# Each block runs in bash with -e and pipefail, in one temporary directory, with BUILD/bin on
# PATH as README.md tells users to set it; a background job is checked by the block's own
# `wait %1`. Any failing command fails the test, with the block's line and its output.
#
# Usage: test_readme.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
readme="$src/README.md"
work=$(mktemp -d /tmp/vgpu-readme-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Each block to run becomes $work/block-LINE.sh; skipped ones are listed with their reason.
awk -v dir="$work" '
  /^<!-- readme-test: / { marker = $0; next }
  /^```(sh|console)$/ && !inblock {
    inblock = 1; kind = substr($0, 4); start = NR
    if (marker ~ /readme-test: run -->/) { out = dir "/block-" NR ".sh"; printf "" > out }
    else if (marker ~ /readme-test: skip: .+-->/) { out = ""; print "skip line " NR ": " marker }
    else { print "README.md:" NR ": a " kind " block without a readme-test marker"; bad = 1; out = "" }
    marker = ""; next
  }
  /^```/ && inblock { inblock = 0; if (out != "") close(out); next }
  /^```/ { marker = ""; next }
  inblock && out != "" {
    if (kind == "sh") print > out
    else if (substr($0, 1, 2) == "$ ") print substr($0, 3) > out
    next
  }
  !inblock && NF { marker = ($0 ~ /^<!-- readme-test: /) ? $0 : "" }
  END { exit bad }
' "$readme" >"$work/plan" || { cat "$work/plan"; echo "test_readme: FAIL: unmarked block"; exit 1; }
sed 's/^/test_readme: /' "$work/plan"

blocks=$(cd "$work" && ls block-*.sh 2>/dev/null | sort -t- -k2 -n) || true
[ -n "$blocks" ] || { echo "test_readme: FAIL: no block of README.md is marked to run"; exit 1; }

# A user's shell on a machine without a GPU: build/bin on PATH, no region named, per-run
# regions kept in this test's directory so that other runs on the machine are not seen.
mkdir -p "$work/home"
export PATH="$build/bin:$PATH" XDG_RUNTIME_DIR="$work" VGPU_SIM_STATE="$work/sim.state"
unset CUDA_DEVICE_MEMORY_SHARED_CACHE NVIDIA_VISIBLE_DEVICES LD_PRELOAD LD_LIBRARY_PATH
failed=0
for b in $blocks; do
  line=${b#block-}
  line=${line%.sh}
  if (cd "$work/home" && bash -euo pipefail -x "$work/$b") >"$work/$b.log" 2>&1; then
    echo "test_readme: ok: README.md:$line ($(grep -c . "$work/$b") commands)"
  else
    echo "test_readme: FAIL: README.md:$line: a command failed; its block ran as:"
    sed 's/^/    /' "$work/$b.log"
    failed=1
  fi
done
[ "$failed" = 0 ] && echo "test_readme: PASS" || echo "test_readme: FAIL"
exit "$failed"

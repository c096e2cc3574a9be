#!/usr/bin/env bash
# test_readme.sh -- the commands of README.md (and of the docs pages that show console output,
# PAGES below) run as written on the simulated GPU, and what they print compared with the page.
#
# The convention (README.md says it too): every ```sh or ```console block of a page is
# preceded by a marker line,
#   <!-- readme-test: run -->            this test runs the block
#   <!-- readme-test: skip: REASON -->   it does not, for the reason given (a cluster, a synopsis)
# and a block without one fails the test, so that a new block gets a decision. Of a ```sh block
# every line is a command; of a ```console block the lines after "$ " are commands and the
# lines under one, up to the next, are what it prints: stdout and stderr together must match
# them line for line, with what varies masked on both sides (console_diff.py: region paths,
# PIDs, dates, measured utilisation, timings; "..." stands for any lines). A command the page
# shows no output for is run, not compared. Each block runs in bash with -e and pipefail, in
# one temporary directory, with BUILD/bin on PATH as README.md tells users to set it (and
# build/ naming BUILD, for pages that call build/bin/...); a background job is checked by the
# block's own `wait %1`. A failing command or a differing output fails the test.
#
# Usage: test_readme.sh SOURCE_DIR BUILD_DIR [PAGE...]   (PAGE relative to SOURCE_DIR)
set -euo pipefail
src=$1
build=$2
shift 2
# The walkthroughs' console output is compared by the e2e (docs/walkthroughs/README.md).
pages=("$@")
[ ${#pages[@]} -gt 0 ] || pages=(README.md docs/vgpu-burn.md)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/vgpu-readme-XXXXXX)
trap 'rm -rf "$work"' EXIT

# plan PAGE TAG: each block of PAGE to run becomes $work/TAG-LINE.sh; of a console block, the
# output shown under command K goes to $work/TAG-LINE.exp.K, and the script sends what command
# K prints to $work/TAG-LINE.out.K. Skipped blocks are listed with their reason.
plan() {
  awk -v dir="$work" -v tag="$2" -v page="$1" '
    function expect(k) { exp_file = dir "/" tag "-" start ".exp." k; printf "" > exp_file }
    /^<!-- readme-test: / { marker = $0; next }
    /^```(sh|console)$/ && !inblock {
      inblock = 1; kind = substr($0, 4); start = NR; k = 0; exp_file = ""
      if (marker ~ /readme-test: run -->/) {
        out = dir "/" tag "-" NR ".sh"
        # xtrace to the block log (fd 9), so that each command`s own output file holds only its output.
        print "exec 9>&2; BASH_XTRACEFD=9" > out
      }
      else if (marker ~ /readme-test: skip: .+-->/) { out = ""; print "skip " page ":" NR ": " marker }
      else { print page ":" NR ": a " kind " block without a readme-test marker"; bad = 1; out = "" }
      marker = ""; next
    }
    /^```/ && inblock { inblock = 0; if (out != "") close(out); if (exp_file != "") close(exp_file); next }
    /^```/ { marker = ""; next }
    inblock && out != "" {
      if (kind == "sh") print > out
      else if (substr($0, 1, 2) == "$ ") {
        k++
        if (exp_file != "") close(exp_file)
        expect(k)
        printf "exec >%s/%s-%d.out.%d 2>&1\n", dir, tag, start, k > out
        print substr($0, 3) > out
      } else if (exp_file != "") print > exp_file
      next
    }
    !inblock && NF { marker = ($0 ~ /^<!-- readme-test: /) ? $0 : "" }
    END { exit bad }
  ' "$src/$1"
}

for i in "${!pages[@]}"; do
  plan "${pages[$i]}" "p$i" >>"$work/plan" || { cat "$work/plan"; echo "test_readme: FAIL: unmarked block"; exit 1; }
done
sed 's/^/test_readme: /' "$work/plan"
ls "$work"/p0-*.sh >/dev/null 2>&1 || { echo "test_readme: FAIL: no block of README.md is marked to run"; exit 1; }

# A user's shell on a machine without a GPU: build/bin on PATH, no region named, per-run
# regions kept in this test's directory so that other runs on the machine are not seen.
mkdir -p "$work/home"
ln -s "$build" "$work/home/build"
export PATH="$build/bin:$PATH" XDG_RUNTIME_DIR="$work" VGPU_SIM_STATE="$work/sim.state"
unset CUDA_DEVICE_MEMORY_SHARED_CACHE NVIDIA_VISIBLE_DEVICES LD_PRELOAD LD_LIBRARY_PATH

# compare TAG-LINE: each command's output against the page's; the differences on stdout.
compare() {
  local rc=0 exp
  for exp in "$work/$1".exp.*; do
    [ -e "$exp" ] && [ -s "$exp" ] || continue
    local k=${exp##*.}
    if ! /usr/bin/python3 "$here/console_diff.py" "$exp" "$work/$1.out.$k" >"$work/$1.diff.$k"; then
      echo "    command $k ($(grep -v '^exec ' "$work/$1.sh" | sed -n "${k}p")) printed other lines:"
      sed 's/^/      /' "$work/$1.diff.$k"
      rc=1
    fi
  done
  return $rc
}

failed=0
for i in "${!pages[@]}"; do
  page=${pages[$i]}
  for b in $(cd "$work" && ls "p$i"-*.sh 2>/dev/null | sort -t- -k2 -n); do
    id=${b%.sh}
    line=${id#p$i-}
    if ! (cd "$work/home" && bash -euo pipefail -x "$work/$b") >"$work/$id.log" 2>&1; then
      echo "test_readme: FAIL: $page:$line: a command failed; its block ran as:"
      sed 's/^/    /' "$work/$id.log"
      for o in "$work/$id".out.*; do [ -e "$o" ] && sed "s|^|    ${o##*/}: |" "$o"; done
      failed=1
    elif ! compare "$id" >"$work/$id.cmp"; then
      echo "test_readme: FAIL: $page:$line: the output differs from the page's (- page, + command):"
      cat "$work/$id.cmp"
      failed=1
    else
      echo "test_readme: ok: $page:$line ($(grep -vc '^exec ' "$work/$b") commands, $(ls "$work/$id".exp.* 2>/dev/null | xargs -r grep -lc . | wc -l) outputs compared)"
    fi
  done
done
[ "$failed" = 0 ] && echo "test_readme: PASS" || echo "test_readme: FAIL"
exit "$failed"

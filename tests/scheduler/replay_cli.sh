# shellcheck shell=bash
# replay_cli.sh -- sourced by the vgpu-replay command-line tests
# (test_replay_*_cli.sh BUILD_DIR): $replay, the binary under BUILD_DIR; a
# scratch folder $tmp removed on exit; fail WHY (counted); finish NAME (the
# last line and the exit status).
set -uo pipefail
# shellcheck disable=SC2034 # used by the sourcing test
replay=$1/bin/vgpu-replay
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  [ $failures -eq 0 ] && echo "$1: all passed"
  exit $((failures > 0))
}

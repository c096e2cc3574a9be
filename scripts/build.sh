#!/usr/bin/env bash
# scripts/build.sh DIR [-DNAME=VALUE...] -- the Makefile's build step, quiet and quick to do
# nothing: configures DIR only when it has no CMake cache yet or an option given here differs
# from the cache (CMake re-runs itself when a CMakeLists.txt changes, so configuring on every
# `make` only cost seconds of gRPC's pkg-config checks), then builds it.
#
# A new folder gets Ninja when it is installed (scripts/deps.sh --build installs it): on a
# terminal one status line that updates in place, errors and warnings in full, and
# "ninja: no work to do." when nothing changed. A folder made before with Makefiles keeps them
# (CMake cannot switch a folder's generator), without make's "Entering directory" lines.
# JOBS: parallel jobs (default: the CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
cache=$dir/CMakeCache.txt

# A folder configured before VGPU_BUILD_TESTS existed, with the test programs in it, keeps them:
# `ctest --test-dir build` goes on working there after an update.
if [ -f "$dir/tests/CTestTestfile.cmake" ] && ! grep -q '^VGPU_BUILD_TESTS:' "$cache" 2>/dev/null &&
  [[ " $* " != *" -DVGPU_BUILD_TESTS="* ]]; then
  set -- "$@" -DVGPU_BUILD_TESTS=ON
fi
configure=0
[ -f "$cache" ] || configure=1
for opt in "$@"; do
  name=${opt#-D} value=${opt#*=}
  name=${name%%=*}
  grep -q "^$name:[A-Z]*=$value\$" "$cache" 2>/dev/null || configure=1
done
if [ "$configure" = 1 ]; then
  generator=()
  [ ! -f "$cache" ] && command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  echo "build: configuring $dir" >&2
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
fi

native=()
grep -q '^CMAKE_GENERATOR:INTERNAL=Unix Makefiles$' "$cache" && native=(-- --no-print-directory)
cmake --build "$dir" -j "${JOBS:-$(nproc)}" "${native[@]}"

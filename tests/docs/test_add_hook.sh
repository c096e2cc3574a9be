#!/bin/bash
# test_add_hook.sh SOURCE_DIR BUILD_DIR -- the recipe "A new interposed CUDA
# function" of docs/architecture.md, followed in a scratch copy of the tree:
#   1. scripts/add-hook.py on the untouched hook lists changes nothing (it writes
#      the layout clang-format keeps), and it refuses a list that is not there;
#   2. it adds a name to VG_CUDA_HOOKS in strcmp order, once, touching no other
#      list, and running it again changes nothing;
#   3. the lists then only compile (driver.c) once the function is declared in
#      src/common/cuda_abi.h;
#   4. test_procaddr_table fails until the export is in procaddr.c's g_variants,
#      and passes once it is.
# The source tree is never written.
set -u
src=$1
build=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/lib" "$tmp/src/common" "$tmp/tests/unit" "$tmp/scripts"
cp "$src"/src/lib/*.h "$src/src/lib/procaddr.c" "$src/src/lib/driver.c" "$tmp/src/lib/"
cp "$src"/src/common/*.h "$tmp/src/common/"
cp "$src/tests/unit/test_procaddr_table.c" "$tmp/tests/unit/"
cp "$src/scripts/add-hook.py" "$tmp/scripts/"
cd "$tmp" || exit 1
hooks=src/lib/hooks.h
cp "$hooks" hooks.orig

# 1. the hook lists as they are: rewritten byte for byte; an unknown list refused.
# (The *_USED lists are not searched, so not kept sorted; the script would sort them.)
for list in VG_CUDA_HOOKS VG_NVML_HOOKS; do
  python3 scripts/add-hook.py "$list" || fail "add-hook.py $list"
done
cmp -s "$hooks" hooks.orig || { diff -u hooks.orig "$hooks"; fail "add-hook.py rewrote the lists"; }
python3 scripts/add-hook.py VG_NO_SUCH_LIST cuFoo 2>err && fail "an unknown list was accepted"
grep -q "no list VG_NO_SUCH_LIST" err || fail "no message for an unknown list: $(cat err)"

# 2. a new hook, in order, once, nowhere else
name=cuMemVgpuRecipeProbe  # sorts mid-list: one line added
python3 scripts/add-hook.py VG_CUDA_HOOKS "$name" || fail "add-hook.py VG_CUDA_HOOKS $name"
cp "$hooks" hooks.added
python3 scripts/add-hook.py VG_CUDA_HOOKS "$name" || fail "add-hook.py, twice"
cmp -s "$hooks" hooks.added || fail "adding the same name twice changed the file"
added=$(diff hooks.orig "$hooks" | grep -c '^>')
removed=$(diff hooks.orig "$hooks" | grep -c '^<')
[ "$added" = 1 ] && [ "$removed" = 0 ] || { diff hooks.orig "$hooks"; fail "more than one line changed"; }
python3 - "$hooks" "$name" <<'PY' || fail "the list is not what driver.c's binary search needs"
import re, sys
text = open(sys.argv[1]).read()
body = re.search(r"#define VG_CUDA_HOOKS\(X\)[^\n]*\n((?:[^\n]*\\\n)*[^\n]*\n)", text).group(1)
names = re.findall(r"X\((\w+)\)", body)
assert names.count(sys.argv[2]) == 1, names
assert names == sorted(names, key=lambda s: s.encode()), names
PY
if command -v clang-format >/dev/null && [ -f "$src/.clang-format" ]; then
  cp "$src/.clang-format" .
  clang-format "$hooks" | cmp -s - "$hooks" || fail "the added line is not clang-format's layout"
fi

# 3. it compiles only once cuda_abi.h declares it
cc=${CC:-cc}
compile_driver() { "$cc" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Isrc/lib -Isrc/common \
  -c src/lib/driver.c -o driver.o 2>"$1"; }
compile_driver err && fail "driver.c compiled without a declaration of $name"
grep -q "$name" err || fail "the compiler did not name $name: $(cat err)"
sed -i "s|^CUresult cuMemGetInfo_v2(|CUresult $name(CUdeviceptr dptr);\nCUresult cuMemGetInfo_v2(|" \
  src/common/cuda_abi.h
compile_driver err || { cat err; fail "driver.c does not compile with $name declared"; }

# 4. the cuGetProcAddress table must name it too
cmocka_flags=$(pkg-config --cflags --libs cmocka)
# libvg_common.a of a sanitizer build needs the sanitizer at link time
san=
grep -q '^VGPU_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && san=-fsanitize=address,undefined
build_test() { "$cc" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $san -Isrc/lib -Isrc/common \
  tests/unit/test_procaddr_table.c -o test_procaddr_table "$build/src/common/libvg_common.a" \
  $cmocka_flags -lpthread; }
build_test || fail "test_procaddr_table does not build in the scratch tree"
./test_procaddr_table >out 2>&1 && { cat out; fail "test_procaddr_table passed without $name in g_variants"; }
grep -q "$name is in VG_CUDA_HOOKS but not in procaddr.c's g_variants" out || {
  cat out
  fail "test_procaddr_table did not name the missing entry"
}
sed -i "s|^static const struct variant g_variants\[\] = {|&\n    {\"$name\", 12000, \"$name\", NULL},|" \
  src/lib/procaddr.c
build_test || fail "test_procaddr_table does not build with the entry"
./test_procaddr_table >out 2>&1 || { cat out; fail "test_procaddr_table fails with $name in g_variants"; }
echo "PASS: add-hook.py, cuda_abi.h, g_variants: the recipe's pieces agree"

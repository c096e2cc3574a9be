#!/bin/bash
# test_certs_write.sh BUILD_DIR -- `vgpu-webhook certs --out-dir` when a file
# cannot be written: ca.crt is /dev/full, so the write fails at fclose with
# ENOSPC. The command must say which file and why and exit 1 -- once it
# closed the FILE a second time after the failed fclose (a double free that
# the sanitizer build reports). The happy path beside it writes all three.
set -u
bin=$1/bin/vgpu-webhook
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$dir/ok" "$dir/full"
"$bin" certs --out-dir "$dir/ok" || fail "certs --out-dir on a writable directory"
for f in ca.crt tls.crt tls.key; do
  grep -q -- '-----BEGIN' "$dir/ok/$f" || fail "$f not written"
done

ln -s /dev/full "$dir/full/ca.crt"
"$bin" certs --out-dir "$dir/full" 2>"$dir/err"
rc=$?
cat "$dir/err"
[ "$rc" = 1 ] || fail "exit $rc, wanted 1"
grep -q "ca.crt: No space left on device" "$dir/err" || fail "message does not name the file and ENOSPC"
[ ! -e "$dir/full/tls.crt" ] || fail "went on after the failed write"
echo "PASS"

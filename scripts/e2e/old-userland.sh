#!/usr/bin/env bash
# Checks, without a cluster, that libvgpu.so limits a workload in an old userland: the
# old-workload image (images.sh oldworkload: Debian bullseye, glibc 2.31, plus vgpu-burn) is
# unpacked, the simulated driver and libvgpu.so are put where the e2e's runtime and the device
# plugin put them (/usr/lib/x86_64-linux-gnu, /usr/local/vgpu + /etc/ld.so.preload), and
# vgpu-burn runs in it with chroot under a 1000 MiB limit. Fails unless the library loaded
# (no "cannot be preloaded", no missing GLIBC_ version) and the limit held.
#
#   old-userland.sh [BUILD_DIR]   default build/ (VGPU_BUILD_DIR also works); needs root
#
# The bullseye root is built once into the cache (mmdebstrap, network) and the image rebuilt only
# when its inputs change, so a second run takes seconds.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

BUILD=${1:-${VGPU_BUILD_DIR:-$E2E_REPO/build}}
LIMIT_MIB=1000
MIB=$((1024 * 1024))

e2e_need_root "old-userland.sh (chroot)"
for f in lib/libvgpu.so sim/libcuda.so.1 sim/libnvidia-ml.so.1 bin/vgpu-burn; do
  [ -f "$BUILD/$f" ] || e2e_die "$BUILD/$f missing: build first (make)"
done
mkdir -p "$E2E_IMAGES"
tar_out=$E2E_IMAGES/old-workload.tar
bash "$E2E_DIR/images.sh" oldworkload "$tar_out" "$BUILD/bin/vgpu-burn"

work=$(mktemp -d /tmp/vgpu-old-userland-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/oci" "$work/rootfs"
tar -C "$work/oci" -xf "$tar_out"
# The image's layers, in order, as the runtime would apply them.
manifest=$(jq -r '.manifests[0].digest' "$work/oci/index.json" | sed 's|:|/|')
for layer in $(jq -r '.layers[].digest' "$work/oci/blobs/$manifest" | sed 's|:|/|'); do
  tar -C "$work/rootfs" -xzf "$work/oci/blobs/$layer"
done
root=$work/rootfs

in_root() {
  chroot "$root" /usr/bin/env -i PATH=/opt/vgpu/bin:/usr/bin:/bin \
    VGPU_SIM_STATE=/run/vgpu-sim/state VGPU_SIM_MEMORY=4g "$@"
}
# Before the preload exists: a library that cannot load breaks every program.
glibc=$(in_root getconf GNU_LIBC_VERSION)
e2e_log "root: $E2E_OLD_SUITE, $glibc"

# What the e2e's sim-runtime and the device plugin's Allocate put into a container.
install -m 0644 "$BUILD/sim/libcuda.so.1" "$BUILD/sim/libnvidia-ml.so.1" "$root/usr/lib/x86_64-linux-gnu/"
install -D -m 0755 "$BUILD/lib/libvgpu.so" "$root/usr/local/vgpu/libvgpu.so"
echo /usr/local/vgpu/libvgpu.so >"$root/etc/ld.so.preload"
mkdir -p "$root/run/vgpu-sim" "$root/tmp"
chmod 1777 "$root/tmp"

out=$(in_root CUDA_DEVICE_MEMORY_LIMIT=${LIMIT_MIB}m CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/region.cache \
  vgpu-burn --alloc 4g --chunk 64m --json 2>&1) || true
echo "$out"
json=$(echo "$out" | grep '^{' | tail -n 1) || true
num() { echo "$json" | sed -n "s/.*\"$1\":\([0-9a-z]*\).*/\1/p"; }
fail() { e2e_die "old userland ($glibc): $*"; }
case $out in *"cannot be preloaded"* | *"not found"*) fail "libvgpu.so or the driver did not load" ;; esac
[ -n "$json" ] || fail "vgpu-burn printed no JSON"
allocated=$(num allocated_bytes)
[ "$(num oom)" = true ] || fail "no out-of-memory: allocated $allocated bytes"
[ "$allocated" -le $((LIMIT_MIB * MIB)) ] || fail "allocated $allocated bytes past the ${LIMIT_MIB} MiB limit"
[ "$allocated" -ge $(((LIMIT_MIB - 64) * MIB)) ] || fail "allocated only $allocated bytes"
[ "$(num device_total)" = $((LIMIT_MIB * MIB)) ] || fail "cuDeviceTotalMem is $(num device_total), not the limit"
e2e_log "PASS: in $E2E_OLD_SUITE ($glibc) libvgpu.so loaded from /etc/ld.so.preload and held" \
  "vgpu-burn to $allocated bytes of a ${LIMIT_MIB} MiB limit"

#!/usr/bin/env bash
# `make images`: builds vgpu's two container images (images/README.md) without a container
# engine or registry, as OCI archives:
#   build/images/vgpu-node.tar        the node agent (DaemonSet vgpu-device-plugin)
#   build/images/vgpu-scheduler.tar   the control plane (the vgpu-scheduler extender)
# Each archive's index names the image with the reference deploy/base/kustomization.yaml gives
# it (newName:newTag), so `ctr -n k8s.io images import FILE` yields the exact name the manifests
# use, and `skopeo copy oci-archive:FILE docker://REGISTRY/NAME:TAG` pushes it.
#
# The same images as images/Dockerfile, built another way: each image is a Debian root made by
# mmdebstrap --variant=minbase (what debian:SUITE-slim is, with the same dpkg path-excludes)
# with the image's images/<image>.packages, as one layer, plus a second layer with the files of
# images/<image>.files from CMake's install rules under /opt/vgpu; the config (ENV, USER,
# WORKDIR, ENTRYPOINT, CMD, LABEL) is read from the Dockerfile's stage of that name
# (images/spec.py). The base layer is cached per package list and Debian snapshot in
# ${VGPU_IMAGES_CACHE:-$HOME/.cache/vgpu-images}; an empty cache only makes the build slower.
#
#   images/build.sh [NAME...]              build these images (default: all); needs root, a
#                                          built build/ (make build) and the Debian archive
#   images/build.sh stage NAME PREFIX DEST copy NAME's files from the install prefix PREFIX to
#                                          DEST/opt/vgpu (the Dockerfile's build stage)
# Environment: VGPU_IMAGES_CACHE (above), VGPU_BUILD_DIR (default build), VGPU_IMAGES_OUT
# (default <build>/images), VGPU_IMAGES_MIRROR (default http://deb.debian.org/debian),
# VGPU_IMAGES_SECURITY_MIRROR (default http://deb.debian.org/debian-security).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMAGES=$ROOT/images
# The dpkg path-excludes of Debian's -slim images (debuerreotype's slimify): no documentation
# but the copyright files, no manual pages, no translations.
SLIM_DPKG=(path-exclude=/usr/share/doc/* path-include=/usr/share/doc/*/copyright
  path-exclude=/usr/share/man/* path-exclude=/usr/share/groff/* path-exclude=/usr/share/info/*
  path-exclude=/usr/share/lintian/* path-exclude=/usr/share/linda/*
  path-exclude=/usr/share/locale/* path-include=/usr/share/locale/locale.alias)

log() { echo "images: $*" >&2; }
die() {
  log "$*"
  exit 1
}

# The entries of images/*.packages and *.files: '#' starts a comment.
entries() { sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"; }

# stage NAME PREFIX DEST: NAME's files (images/NAME.files) from PREFIX to DEST/opt/vgpu.
stage() {
  local name=$1 prefix=$2 dest=$3 f
  [ -f "$IMAGES/$name.files" ] || die "no $IMAGES/$name.files"
  while read -r f; do
    [ -f "$prefix/$f" ] || die "$name: $prefix/$f was not installed (CMake's install rules)"
    install -D -m "$(stat -c %a "$prefix/$f")" "$prefix/$f" "$dest/opt/vgpu/$f"
  done < <(entries "$IMAGES/$name.files")
}

if [ "${1:-}" = stage ]; then
  [ $# -eq 4 ] || die "usage: images/build.sh stage NAME PREFIX DEST"
  stage "$2" "$3" "$4"
  exit 0
fi

BUILD=${VGPU_BUILD_DIR:-$ROOT/build}
OUT=${VGPU_IMAGES_OUT:-$BUILD/images}
CACHE=${VGPU_IMAGES_CACHE:-$HOME/.cache/vgpu-images}
MIRROR=${VGPU_IMAGES_MIRROR:-http://deb.debian.org/debian}
SECURITY=${VGPU_IMAGES_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
. "$ROOT/scripts/oci.sh"
spec() { python3 "$IMAGES/spec.py" "$@"; }

# The Debian snapshot a base is made from, as apt on this machine last saw the archive: the
# Date of each suite's InRelease (`apt-get update` refreshes them, and so a cached base goes
# stale when Debian publishes updates). Without those lists, today's date.
snapshot() {
  local suite=$1 url file found=""
  for url in "$MIRROR $suite" "$MIRROR $suite-updates" "$SECURITY $suite-security"; do
    file=/var/lib/apt/lists/$(echo "${url% *}" | sed -e 's|^[a-z]*://||' -e 's|/*$||' -e 's|/|_|g')_dists_${url#* }_InRelease
    [ -f "$file" ] && found+="${url#* } $(sed -n 's/^Date: //p' "$file")"$'\n'
  done
  if [ -n "$found" ]; then printf '%s' "$found"; else date -u +%Y-%m-%d; fi
}

# base NAME: prints the OCI layout (image "img") of NAME's base layer, from the cache or made
# now: mmdebstrap --variant=minbase of the stage's suite with images/NAME.packages.
base() {
  local name=$1 suite packages snap key dir work epoch
  suite=$(spec suite "$name")
  packages=$(entries "$IMAGES/$name.packages" | sort -u | paste -sd, -)
  snap=$(snapshot "$suite")
  # The recipe (these functions) is part of the key: changing it makes new bases.
  key=$(printf '%s\n' "$suite" "$packages" "$MIRROR" "$SECURITY" "${SLIM_DPKG[*]}" "$snap" \
    "$(declare -f base slimify clamp)" | sha256sum | cut -c1-16)
  dir=$CACHE/base-$suite-$key
  if [ -f "$dir/oci/index.json" ]; then
    log "$name: base $suite + ${packages:-nothing} from the cache ($dir)"
    echo "$dir/oci"
    return
  fi
  log "$name: making the base: mmdebstrap --variant=minbase $suite + ${packages:-nothing}"
  # Files dated no later than the snapshot's newest InRelease (else the commit): repeatable.
  epoch=$(printf '%s\n' "$snap" | sed -n 's/^[a-z-]* //p' | while read -r d; do date -u -d "$d" +%s; done |
    sort -n | tail -1)
  epoch=${epoch:-$SOURCE_DATE_EPOCH}
  mkdir -p "$CACHE"
  work=$(mktemp -d "$CACHE/.base-XXXXXX")
  # On failure: remove the half-made base, unless mmdebstrap left mounts in it.
  trap 'grep -q " $work/" /proc/mounts && log "left $work (mounts inside)" || rm -rf "$work"' EXIT
  oci_start "$work"
  local opts=() o
  for o in "${SLIM_DPKG[@]}"; do opts+=("--dpkgopt=$o"); done
  # merged-usr: the /usr symlinks made directly and usr-is-merged installed, as debootstrap and
  # Debian's images do, rather than the usrmerge package (and Perl with it).
  SOURCE_DATE_EPOCH=$epoch mmdebstrap --quiet --mode=root --variant=minbase --format=directory \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    ${packages:+--include="$packages"} "${opts[@]}" "$suite" "$work/bundle/rootfs" \
    "deb $MIRROR $suite main" "deb $MIRROR $suite-updates main" \
    "deb $SECURITY $suite-security main" >&2 || die "$name: mmdebstrap failed"
  slimify "$work/bundle/rootfs"
  clamp "$work/bundle/rootfs" "$epoch"
  SOURCE_DATE_EPOCH=$epoch oci_layer "$work" "debian $suite minbase + ${packages:-nothing}" >&2
  rm -rf "$work/bundle"
  rm -rf "$dir" && mv "$work" "$dir"
  trap - EXIT
  echo "$dir/oci"
}

# slimify ROOT: removes what SLIM_DPKG keeps out of later installs but the essential packages,
# unpacked before dpkg reads it, brought in (as debuerreotype-slimify does for -slim images).
slimify() {
  local r=$1
  find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$r/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
  find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  local d
  for d in man groff info lintian linda; do
    [ ! -d "$r/usr/share/$d" ] || find "$r/usr/share/$d" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  done
}

# clamp ROOT EPOCH: nothing under ROOT is dated later than EPOCH.
clamp() {
  find "$1" -newermt "@$2" -print0 | xargs -0r touch -h -d "@$2"
}

# image NAME: build/images/NAME.tar.
image() {
  local name=$1 ref layout work config=()
  ref=$(spec ref "$name")
  layout=$(base "$name")
  work=$(mktemp -d "$OUT/.$name-XXXXXX")
  oci_start "$work" "$layout"
  stage "$name" "$INSTALL" "$work/bundle/rootfs"
  clamp "$work/bundle/rootfs/opt" "$SOURCE_DATE_EPOCH"
  mapfile -t config < <(VERSION=${ref##*:} REVISION=$REVISION SOURCE=$SOURCE spec config "$name")
  oci_finish "$work" "$ref" "$OUT/$name.tar" --author vgpu "${config[@]}" >&2
  log "built $ref into $OUT/$name.tar ($(du -h "$OUT/$name.tar" | cut -f1))"
}

main() {
  [ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap's root mode, umoci unpack keeping owners): sudo make images"
  bash "$ROOT/scripts/deps.sh" mmdebstrap umoci jq python3-yaml
  [ -x "$BUILD/bin/vgpu-device-plugin" ] || die "no $BUILD/bin/vgpu-device-plugin: run make build"
  local names=("$@") name
  [ ${#names[@]} -gt 0 ] || mapfile -t names < <(spec names)
  REVISION=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)
  [ -z "$REVISION" ] || git -C "$ROOT" diff --quiet HEAD 2>/dev/null || REVISION+=-dirty
  SOURCE=$(git -C "$ROOT" config --get remote.origin.url 2>/dev/null || true)
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
  mkdir -p "$OUT"
  INSTALL=$(mktemp -d "$OUT/.install-XXXXXX")
  trap 'rm -rf "$INSTALL" "$OUT"/.vgpu-*-??????' EXIT
  cmake --install "$BUILD" --prefix "$INSTALL" --strip >/dev/null
  for name in "${names[@]}"; do
    [ -f "$IMAGES/$name.files" ] || die "unknown image $name (images: $(spec names | paste -sd' ' -))"
    image "$name"
  done
}

main "$@"

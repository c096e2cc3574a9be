#!/usr/bin/env bash
# Builds the e2e cluster's container images locally (there is no registry) as OCI archives that
# `ctr images import` takes, and imports them into the running cluster's containerd.
#
#   images.sh pause [OUT_TAR]         localhost/vgpu-e2e/pause:v1.20.2, the pod sandbox image: a
#                                     static pause binary (pause.c); default OUT_TAR
#                                     build/e2e/images/pause.tar, rebuilt only when pause.c changed
#   images.sh workload OUT_TAR FILE...  localhost/vgpu-e2e/workload:latest: busybox-static with its
#                                     applet links (sh, cat, env, sleep, grep...) plus each FILE in
#                                     /opt/vgpu/bin (FILE=/ABS/PATH puts it at that path instead)
#                                     and the shared libraries ldd says they need, at their own
#                                     paths; PATH starts with /opt/vgpu/bin
#                                     Its default command prints what the container was given
#                                     (env, preload, vgpu status) then sleeps: the seeds' images
#                                     that have no command of their own run it; working dir /app
#   images.sh kube-scheduler [OUT_TAR]  registry.k8s.io/kube-scheduler:<the cluster's version>: the
#                                     cluster's own (static) kube-scheduler, for deploy/'s
#                                     scheduler Deployment; default OUT_TAR
#                                     build/e2e/images/kube-scheduler.tar
#   images.sh oldrootfs               builds (once) a Debian bullseye minbase root (glibc 2.31) with
#                                     mmdebstrap into the cache, and prints the tarball's path
#   images.sh oldworkload OUT_TAR FILE...  localhost/vgpu-e2e/old-workload:latest: that root plus
#                                     each FILE in /opt/vgpu/bin, with none of this host's
#                                     libraries (a FILE must run on the old glibc); rebuilt only
#                                     when a FILE, the root or this script changed (OUT_TAR.key)
#   images.sh import TAR...           imports into the cluster's containerd (cluster.sh up)
#   images.sh push TAR REF...         copies the image in TAR to the cluster's local registry
#                                     (cluster.sh up) as each REF, e.g. docker.io/library/x:latest
#                                     (which containerd then pulls from there: its mirror)
#
# Images are made with Debian's umoci (scripts/oci.sh, shared with `make images`); the archive's
# index carries the full reference in io.containerd.image.name and
# org.opencontainers.image.ref.name, so ctr names the image exactly (no --base-name needed).
# Pods must use imagePullPolicy: Never (or IfNotPresent for the pause tag): nothing can be pulled.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../oci.sh"

# oci_start DIR, oci_finish DIR REF OUT_TAR CONFIG_ARGS...: scripts/oci.sh
image_finish() {
  oci_finish "$@" --author vgpu-e2e
  e2e_log "built $2 into $3"
}

build_pause() {
  local out=${1:-$E2E_IMAGES/pause.tar} dir=$E2E_IMAGES/pause.d
  if [ -f "$out" ] && [ "$out" -nt "$E2E_DIR/pause.c" ] && [ "$out" -nt "$0" ]; then
    return
  fi
  oci_start "$dir"
  gcc -static -O2 -Wall -Wextra -o "$dir/bundle/rootfs/pause" "$E2E_DIR/pause.c" ||
    e2e_die "compiling $E2E_DIR/pause.c failed (gcc -static needs libc6-dev)"
  image_finish "$dir" "$E2E_PAUSE_IMAGE" "$out" --config.entrypoint /pause --config.user 65535:65535
}

# Copies $1 to $2 inside the root $3, and (when $4 is "libs") the shared libraries it needs to
# their own paths.
add_file() {
  local src=$1 dest=$2 root=$3 lib
  [ -f "$src" ] || e2e_die "workload file $src does not exist"
  install -D -m "$(stat -c %a "$src")" "$src" "$root$dest"
  [ "$4" = libs ] || return 0
  ldd "$src" 2>/dev/null | grep -q 'not found' &&
    e2e_log "warning: $src needs libraries ldd cannot find: $(ldd "$src" | grep 'not found' | tr -s ' \t\n' ' ')"
  for lib in $(ldd "$src" 2>/dev/null | sed -n -e 's|.*=> \(/[^ ]*\) .*|\1|p' -e 's|^[[:space:]]*\(/[^ ]*\) .*|\1|p'); do
    [ -e "$root$lib" ] || install -D -m 755 "$(readlink -f "$lib")" "$root$lib"
  done
}

build_workload() {
  [ $# -ge 1 ] || e2e_usage
  local out=$1 dir=$E2E_IMAGES/workload.d root applet
  shift
  [ -x /bin/busybox ] || e2e_die "/bin/busybox missing: run scripts/e2e/deps.sh (busybox-static)"
  oci_start "$dir"
  root=$dir/bundle/rootfs
  install -D -m 755 /bin/busybox "$root/bin/busybox"
  mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin"
  for applet in $(/bin/busybox --list-full); do
    [ -d "$root/${applet%/*}" ] || mkdir -p "$root/${applet%/*}"
    [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
  done
  mkdir -p "$root/opt/vgpu/bin" "$root/tmp" "$root/etc" "$root/proc" "$root/sys" "$root/dev"
  chmod 1777 "$root/tmp"
  add_files "$root" libs "$@"
  finish_workload "$dir" "$E2E_WORKLOAD_IMAGE" "$out" /app
}

# add_files ROOT libs|nolibs FILE...: each FILE into /opt/vgpu/bin (FILE=/ABS/PATH: that path).
add_files() {
  local root=$1 libs=$2 arg
  shift 2
  for arg in "$@"; do
    case $arg in
      *=/*) add_file "${arg%%=*}" "${arg#*=}" "$root" "$libs" ;;
      *) add_file "$arg" "/opt/vgpu/bin/$(basename "$arg")" "$root" "$libs" ;;
    esac
  done
}

# finish_workload DIR REF OUT_TAR [WORKDIR]: a workload image's config (PATH starts with
# /opt/vgpu/bin; the working directory is WORKDIR, default /).
finish_workload() {
  image_finish "$1" "$2" "$3" \
    --config.env PATH=/opt/vgpu/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.entrypoint sh --config.entrypoint -c --config.cmd "$WORKLOAD_DEFAULT" \
    --config.workingdir "${4:-/}"
}

WORKLOAD_DEFAULT='env | grep -E "^(NVIDIA|CUDA|VGPU)" | sort; cat /etc/ld.so.preload; vgpu status; exec sleep infinity'

build_kube_scheduler() {
  local out=${1:-$E2E_IMAGES/kube-scheduler.tar} dir=$E2E_IMAGES/kube-scheduler.d bin=$E2E_KUBE_BIN/kube-scheduler
  [ -x "$bin" ] || e2e_die "$bin missing: run scripts/e2e/build-k8s.sh"
  if [ -f "$out" ] && [ "$out" -nt "$bin" ] && [ "$out" -nt "$0" ]; then
    return
  fi
  oci_start "$dir"
  install -D -m 755 "$bin" "$dir/bundle/rootfs/usr/local/bin/kube-scheduler"
  image_finish "$dir" "$E2E_KUBE_SCHEDULER_IMAGE" "$out" --config.entrypoint /usr/local/bin/kube-scheduler \
    --config.user 65532:65532
}

push_image() {
  [ $# -ge 2 ] || e2e_usage
  local tar=$1 ref
  shift
  for ref in "$@"; do
    # docker.io/x and nvcr.io/x are mirrored from the local registry under the path x.
    skopeo copy --quiet --dest-tls-verify=false "oci-archive:$tar" \
      "docker://127.0.0.1:$E2E_REGISTRY_PORT/${ref#*/}" || e2e_die "skopeo copy $tar to the registry as $ref failed"
    e2e_log "pushed $tar as $ref"
  done
}

# The old root's tarball, built once: minbase (dpkg, apt, coreutils, dash, grep...) without
# documentation or locales; the package lists are dropped, nothing is installed into it later.
old_rootfs() {
  if [ ! -s "$E2E_OLD_ROOTFS" ]; then
    command -v mmdebstrap >/dev/null || e2e_die "mmdebstrap not installed: run scripts/e2e/deps.sh"
    mkdir -p "$(dirname "$E2E_OLD_ROOTFS")"
    e2e_log "building the $E2E_OLD_SUITE root into $E2E_OLD_ROOTFS (once; a few minutes)"
    # shellcheck disable=SC2016 # $1 is mmdebstrap's, in its hook
    mmdebstrap --quiet --variant=minbase --format=tar \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
      "$E2E_OLD_SUITE" "$E2E_OLD_ROOTFS.tmp" "$E2E_OLD_MIRROR" ||
      e2e_die "mmdebstrap $E2E_OLD_SUITE from $E2E_OLD_MIRROR failed"
    mv "$E2E_OLD_ROOTFS.tmp" "$E2E_OLD_ROOTFS"
  fi
  echo "$E2E_OLD_ROOTFS"
}

# What an old-workload tarball was made from: the root, this script, the FILE arguments and
# their contents (written next to the tarball as OUT_TAR.key).
old_workload_key() {
  local rootfs=$1 arg
  shift
  {
    stat -c '%n %s %Y' "$rootfs"
    sha256sum "$0" "$E2E_DIR/lib.sh"
    for arg in "$@"; do
      echo "$arg"
      sha256sum <"${arg%%=*}" || e2e_die "workload file ${arg%%=*} does not exist"
    done
  } | sha256sum | cut -d' ' -f1
}

build_old_workload() {
  [ $# -ge 1 ] || e2e_usage
  local out=$1 dir=$E2E_IMAGES/old-workload.d rootfs root key
  shift
  rootfs=$(old_rootfs)
  key=$(old_workload_key "$rootfs" "$@")
  if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
    e2e_log "$out is up to date"
    return
  fi
  oci_start "$dir"
  root=$dir/bundle/rootfs
  tar -C "$root" -xf "$rootfs" --exclude='./dev/*'
  mkdir -p "$root/opt/vgpu/bin"
  add_files "$root" nolibs "$@"
  finish_workload "$dir" "$E2E_OLD_WORKLOAD_IMAGE" "$out"
  echo "$key" >"$out.key"
}

import_images() {
  [ $# -ge 1 ] || e2e_usage
  [ -S "$E2E_CONTAINERD_SOCK" ] || e2e_die "no containerd at $E2E_CONTAINERD_SOCK: is the cluster up (scripts/e2e/cluster.sh up)?"
  local tar
  for tar in "$@"; do
    e2e_ctr images import "$tar" >/dev/null || e2e_die "ctr images import $tar failed"
    e2e_log "imported $tar"
  done
}

main() {
  e2e_need_root "images.sh"
  command -v umoci >/dev/null || e2e_die "umoci not installed: run scripts/e2e/deps.sh"
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case $cmd in
    pause) build_pause "$@" ;;
    workload) build_workload "$@" ;;
    kube-scheduler) build_kube_scheduler "$@" ;;
    oldrootfs) old_rootfs ;;
    oldworkload) build_old_workload "$@" ;;
    import) import_images "$@" ;;
    push) push_image "$@" ;;
    *) e2e_usage ;;
  esac
}

main "$@"

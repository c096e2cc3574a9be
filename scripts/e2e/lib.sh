# shellcheck shell=bash disable=SC2034
# Shared paths and helpers of the end-to-end cluster scripts (scripts/e2e/*.sh); sourced, not run.
#
#   VGPU_E2E_CACHE  built Kubernetes binaries (default ${XDG_CACHE_HOME:-$HOME/.cache}/vgpu-e2e);
#                   the binaries dir is keyed on the Kubernetes version and a hash of build-k8s.sh,
#                   so a changed recipe builds afresh
#   VGPU_E2E_STATE  the running cluster: certificates, configs, data, pids, logs (default /tmp/vgpu-e2e)

E2E_K8S_VERSION=1.20.2
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
E2E_REPO=$(cd "$E2E_DIR/../.." && pwd)
E2E_CACHE=${VGPU_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vgpu-e2e}
E2E_STATE=${VGPU_E2E_STATE:-/tmp/vgpu-e2e}
E2E_RECIPE_HASH=$(sha256sum "$E2E_DIR/build-k8s.sh" | cut -c1-12)
E2E_KUBE_BIN=$E2E_CACHE/kubernetes-$E2E_K8S_VERSION-$E2E_RECIPE_HASH/bin
E2E_KUBE_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
E2E_IMAGES=$E2E_REPO/build/e2e/images
E2E_PAUSE_IMAGE=localhost/vgpu-e2e/pause:v$E2E_K8S_VERSION
E2E_WORKLOAD_IMAGE=localhost/vgpu-e2e/workload:latest
E2E_KUBE_SCHEDULER_IMAGE=registry.k8s.io/kube-scheduler:v$E2E_K8S_VERSION
# The local registry cluster.sh runs (containerd's mirror of docker.io and nvcr.io).
E2E_REGISTRY_PORT=15000
# An old userland for the workload: Debian bullseye's glibc 2.31 (UBI 8 has 2.28, Ubuntu 20.04
# 2.31), built once with mmdebstrap into the cache (images.sh oldrootfs).
E2E_OLD_SUITE=bullseye
E2E_OLD_MIRROR=${VGPU_E2E_DEBIAN_MIRROR:-http://deb.debian.org/debian}
E2E_OLD_ROOTFS=$E2E_CACHE/rootfs-$E2E_OLD_SUITE-minbase.tar
E2E_OLD_WORKLOAD_IMAGE=localhost/vgpu-e2e/old-workload:latest

e2e_log() { echo "e2e: $*" >&2; }
e2e_die() {
  echo "e2e: error: $*" >&2
  exit 1
}
# Prints the comment block atop the running script (its usage) and exits 2.
e2e_usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
# Fails unless running as root: the cluster mounts, creates interfaces and runs containers.
e2e_need_root() { [ "$(id -u)" -eq 0 ] || e2e_die "${1:-this} needs root"; }

# The cluster's own containerd (cluster.sh) and ctr against it, in the CRI's namespace.
E2E_CONTAINERD_SOCK=$E2E_STATE/containerd/containerd.sock
e2e_ctr() { ctr --address "$E2E_CONTAINERD_SOCK" -n k8s.io "$@"; }

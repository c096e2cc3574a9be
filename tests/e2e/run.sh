#!/usr/bin/env bash
# tests/e2e/run.sh -- `make e2e`: vgpu on a real single-node Kubernetes.
#
# Builds (or takes from the cache) Kubernetes 1.20.2 from Debian's source
# package, builds the pause and workload images (vgpu's own images come from
# `make images`), starts etcd, kube-apiserver, kube-controller-manager,
# a registry, containerd and the kubelet (scripts/e2e/cluster.sh) with the
# simulated GPUs brought into containers by tests/e2e/sim-runtime (as NVIDIA's
# container toolkit brings the driver), pushes the seeds' stand-in images,
# then e2e.py installs vgpu as docs/install.md says and runs its cases; at the
# end everything it started is stopped and its state removed. docs/e2e.md.
#
# Exit status: 0 all cases passed; 1 a case failed or the cluster did not
# come up; 0 with a line starting "e2e: SKIP" when this machine cannot run a
# cluster (the reason is printed).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=${VGPU_E2E_BUILD:-$ROOT/build}
export VGPU_E2E_STATE=${VGPU_E2E_STATE:-/tmp/vgpu-e2e}
WORK=$VGPU_E2E_STATE/vgpu
SIM_STATE_DIR=$VGPU_E2E_STATE/sim
ENV_FILE=$VGPU_E2E_STATE.env

skip() { echo "e2e: SKIP: $*"; exit 0; }

preflight() {
  [ "$(uname -s)" = Linux ] || skip "not Linux"
  [ "$(id -u)" -eq 0 ] || skip "needs root (containerd and the kubelet run as root)"
  command -v apt-get >/dev/null || skip "needs Debian's apt-get for the Kubernetes sources"
  [ -d /sys/fs/cgroup ] || skip "no cgroup filesystem"
  if [ -n "${VGPU_E2E_SKIP:-}" ]; then skip "VGPU_E2E_SKIP is set: $VGPU_E2E_SKIP"; fi
}

# The seeds' images run a shell and gpu_burn from /app (tests/e2e/workload/).
# util-linux's flock (busybox has none): what a tenant holding its region's
# flock for ever runs (e2e case hostile-tenants).
workload_files() {
  echo "$BUILD/bin/vgpu-burn" "$BUILD/bin/vgpu" "$BUILD/bin/vgpu-sim" "$(nopreload_loader)" /usr/bin/flock \
    "tests/e2e/workload/gpu_burn=/app/gpu_burn" "tests/e2e/workload/bash=/bin/bash"
}

# This machine's dynamic loader with /etc/ld.so.preload renamed: what a tenant
# who wants to run without libvgpu can bring in its image (e2e case
# backstop-unpreloaded, backstop-compute); the workload image carries it as ld-nopreload.so.
nopreload_loader() {
  local out=$BUILD/e2e/ld-nopreload.so
  mkdir -p "$BUILD/e2e"
  python3 - /lib64/ld-linux-x86-64.so.2 "$out" <<'EOF'
import sys
data = open(sys.argv[1], "rb").read()
old, new = b"/etc/ld.so.preload", b"/tmp/no.so.preload"
if data.count(old) != 1:
    sys.exit("%s names /etc/ld.so.preload %d times" % (sys.argv[1], data.count(old)))
open(sys.argv[2], "wb").write(data.replace(old, new))
EOF
  chmod 0755 "$out"
  echo "$out"
}

# The runc wrapper containerd runs, with this build's paths filled in.
write_runtime() {
  local out=$VGPU_E2E_STATE.sim-runtime
  sed -e "s|@RUNC@|$(command -v runc)|" -e "s|@SIM_LIB_DIR@|$BUILD/sim|" \
      -e "s|@SIM_SMI@|$BUILD/bin/vgpu|" \
      -e "s|@SIM_STATE_FILE@|$SIM_STATE_DIR/state|" -e "s|@LOG@|$VGPU_E2E_STATE/logs/sim-runtime.log|" \
      tests/e2e/sim-runtime.in >"$out"
  chmod 0755 "$out"
  echo "$out"
}

# Two simulated GPUs of 8 GiB, created before any container starts so that
# every process (host agents, containers) shares one device state (whose
# name, as the rest of its configuration, wins over the variables of later
# processes). Named for their memory, not the simulator's default 16 GB.
create_sim_state() {
  mkdir -p "$SIM_STATE_DIR"
  chmod 0777 "$SIM_STATE_DIR"
  LD_LIBRARY_PATH=$BUILD/sim VGPU_SIM_STATE=$SIM_STATE_DIR/state VGPU_SIM_DEVICES=2 \
    VGPU_SIM_MEMORY=8g VGPU_SIM_NAME="NVIDIA A100-SXM4-8GB (vgpu-sim)" \
    "$BUILD/bin/vgpu-sim" status >/dev/null
  chmod 0666 "$SIM_STATE_DIR/state"
}

cleanup() {
  local rc=$?
  if [ -z "${VGPU_E2E_KEEP:-}" ]; then
    bash scripts/e2e/cluster.sh down || true
    rm -f "$ENV_FILE" "$VGPU_E2E_STATE.sim-runtime"
  else
    echo "e2e: VGPU_E2E_KEEP is set: the cluster stays up ($ENV_FILE); stop it with scripts/e2e/cluster.sh down"
  fi
  exit $rc
}

main() {
  preflight
  bash scripts/e2e/deps.sh
  [ -x "$BUILD/bin/vgpu-device-plugin" ] || { echo "e2e: build vgpu first (make build): $BUILD" >&2; exit 1; }
  # vgpu's own images, as `make images` builds them (warm: a few seconds per image).
  VGPU_BUILD_DIR=$BUILD bash images/build.sh
  bash scripts/e2e/build-k8s.sh
  mkdir -p build/e2e/images
  bash scripts/e2e/images.sh pause
  # shellcheck disable=SC2046
  bash scripts/e2e/images.sh workload build/e2e/images/workload.tar $(workload_files)
  # Debian bullseye (glibc 2.31) plus vgpu-burn, for the old-userland case; cached.
  bash scripts/e2e/images.sh oldworkload build/e2e/images/old-workload.tar "$BUILD/bin/vgpu-burn"
  bash scripts/e2e/cluster.sh down >/dev/null 2>&1 || true
  trap cleanup EXIT
  mkdir -p "$VGPU_E2E_STATE/logs"
  # Next to the state dir, not in it: cluster.sh up wipes the state dir.
  VGPU_E2E_RUNTIME=$(write_runtime) bash scripts/e2e/cluster.sh up
  bash scripts/e2e/images.sh import build/e2e/images/workload.tar build/e2e/images/old-workload.tar
  # The images the seeds' pod specs name, served by the cluster's registry (containerd's mirror).
  bash scripts/e2e/images.sh push build/e2e/images/workload.tar docker.io/chrstnhntschl/gpu_burn:latest \
    docker.io/cheyang/gpu-player:v2 nvcr.io/nvidia/cuda:12.6.1-base-ubuntu22.04
  create_sim_state
  mkdir -p "$WORK" "$VGPU_E2E_STATE/logs"
  bash scripts/e2e/cluster.sh env >"$ENV_FILE"
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  VGPU_E2E_BUILD=$BUILD VGPU_E2E_WORK=$WORK VGPU_E2E_SIM_STATE=$SIM_STATE_DIR/state \
    /usr/bin/python3 tests/e2e/e2e.py "$@"
}

main "$@"

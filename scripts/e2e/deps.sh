#!/usr/bin/env bash
# Installs the Debian packages the end-to-end cluster (scripts/e2e/) needs, when run as root;
# otherwise prints the exact apt-get line and fails. Quiet when everything is present.
#   golang-go, dpkg-dev, golang-github-modern-go-reflect2-dev   build Kubernetes from Debian's source
#   etcd-server, containerd, runc, containernetworking-plugins, iproute2, openssl   run the cluster
#   busybox-static, umoci, gcc + libc6-dev (static pause binary), jq   build the images
set -euo pipefail

packages=(golang-go dpkg-dev golang-github-modern-go-reflect2-dev
  etcd-server containerd runc containernetworking-plugins iproute2 openssl
  busybox-static umoci gcc libc6-dev jq)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "vgpu e2e: missing packages. Install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "vgpu e2e: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

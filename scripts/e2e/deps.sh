#!/usr/bin/env bash
# Installs the Debian packages the end-to-end cluster (scripts/e2e/) needs, when run as root;
# otherwise prints the exact apt-get line and fails. Quiet when everything is present.
#   golang-go, dpkg-dev, golang-github-modern-go-reflect2-dev   build Kubernetes from Debian's source
#   etcd-server, containerd (with ctr), runc, containernetworking-plugins, iproute2, openssl, curl
#                                                           run the cluster
#   docker-registry, skopeo, iptables     the seeds' images' registry; the kubernetes Service's DNAT
#   busybox-static, umoci, gcc + libc6-dev (static pause binary), jq   build the images
#   mmdebstrap                                                  the old-userland image's rootfs
#   kubernetes-client (kubectl 1.20), unless a kubectl is already installed
set -euo pipefail

packages=(golang-go dpkg-dev golang-github-modern-go-reflect2-dev
  etcd-server containerd runc containernetworking-plugins iproute2 openssl curl
  busybox-static umoci gcc libc6-dev jq docker-registry skopeo iptables mmdebstrap)
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
exec "$(dirname "$0")/../deps.sh" "${packages[@]}"

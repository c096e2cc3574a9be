#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, when run as root;
# otherwise prints the exact apt-get line and fails. With --build, only those the build needs
# (`make`, `make demo`, `make install`, images/Dockerfile's build stage): none of them runs a
# service. Without arguments also the tests' (`make test`, `make asan`, the benchmarks), among
# them prometheus for promtool. With other arguments, installs those packages instead
# (scripts/e2e/deps.sh passes the end-to-end cluster's, images/build.sh mmdebstrap and umoci).
set -euo pipefail

build=(build-essential cmake ninja-build pkg-config
  libgrpc-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler protobuf-compiler-grpc
  libjson-c-dev libcurl4-openssl-dev libyaml-dev libmicrohttpd-dev
  help2man)  # help2man: the man pages, made from each program's --help (man/)
if [ "${1:-}" = --build ] && [ $# -eq 1 ]; then
  packages=("${build[@]}")
elif [ $# -gt 0 ]; then
  packages=("$@")
else
  packages=("${build[@]}" libcmocka-dev python3-grpcio python3-protobuf
  prometheus python3-yaml groff-base clang libclang-rt-dev)  # cmocka: the test programs;
  # promtool checks the metrics;
  # python3-yaml reads rendered manifests; groff renders the installed man pages (test_install);
  # clang's libFuzzer runtime (libclang-rt-dev, only recommended by clang) for make fuzz-smoke
  # kubectl (for `kubectl kustomize` in tests/deploy): Debian's kubernetes-client, unless a kubectl
  # from elsewhere already owns /usr/bin/kubectl.
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "vgpu: missing packages. Install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "vgpu: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null

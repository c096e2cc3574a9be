#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler and kubelet 1.20.2 from Debian's
# source package `kubernetes` (bookworm) into the e2e cache (see lib.sh); does nothing when they are
# there. Prints the binaries' directory on stdout, progress on stderr.
#
# Why it is done this way (docs/e2e.md has the long form):
# - apt-get source through a private sources list, lists and cache dir: the system's apt
#   configuration has no deb-src line and is left alone.
# - Debian's Go 1.19 in GOPATH mode (GO111MODULE=off): module mode fails on this tree.
# - The tarball lacks pkg/generated/openapi/zz_generated.openapi.go: openapi-gen is built from the
#   tree's vendor/ and run on the same input list as Makefile.generated_files.
# - Build tags notest, providerless (no in-tree cloud providers: their huge vendored SDKs took most
#   of the build time) and dockerless (no dockershim in the kubelet: the runtime is containerd).
# - vendor/github.com/modern-go/reflect2 1.0.1 crashes the apiserver after some minutes on Go >= 1.18:
#   replaced by Debian's golang-github-modern-go-reflect2-dev (1.0.2).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SUITE=bookworm
KPKG=k8s.io/kubernetes
WORK=$E2E_CACHE/build
GOPATH_DIR=$WORK/gopath
TREE=$GOPATH_DIR/src/$KPKG
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2

have_binaries() {
  local b
  for b in "${E2E_KUBE_BINARIES[@]}"; do [ -x "$E2E_KUBE_BIN/$b" ] || return 1; done
}

# The Debian archive the system already uses (VGPU_E2E_DEBIAN_MIRROR overrides it).
debian_mirror() {
  local m=${VGPU_E2E_DEBIAN_MIRROR:-}
  [ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v s="$SUITE" '$1 == "deb" && $0 ~ " " s "( |$)" {
      for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }')
  [ -n "$m" ] || m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk -v s="$SUITE" '/^URIs:/ { u = $2 } /^Suites:/ && $0 ~ " " s "( |$)" { print u; exit }')
  echo "${m:-http://deb.debian.org/debian}"
}

# apt-get with a private sources list, lists and cache: the system's configuration is untouched.
private_apt() {
  apt-get -q -o Dir::Etc::SourceList="$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$WORK/apt/lists" -o Dir::Cache="$WORK/apt/cache" \
    -o APT::Sandbox::User=root "$@"
}

fetch_source() {
  local mirror log=$WORK/apt.log
  mirror=$(debian_mirror)
  e2e_log "fetching Debian's kubernetes source package from $mirror ($SUITE)"
  mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/dl"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $SUITE main" \
    >"$WORK/apt/sources.list"
  private_apt update >"$log" 2>&1 || e2e_die "apt-get update of the private deb-src list failed; see $log"
  (cd "$WORK/dl" && private_apt source kubernetes) >>"$log" 2>&1 ||
    e2e_die "apt-get source kubernetes failed; see $log"
  local tree
  tree=$(find "$WORK/dl" -mindepth 1 -maxdepth 1 -type d -name "kubernetes-*$E2E_K8S_VERSION")
  [ -n "$tree" ] || e2e_die "no kubernetes-*$E2E_K8S_VERSION tree in $WORK/dl (has Debian's version moved?); see $log"
  mkdir -p "$(dirname "$TREE")"
  mv "$tree" "$TREE"
  rm -rf "$WORK/dl"
}

replace_reflect2() {
  [ -f "$REFLECT2/reflect2.go" ] || e2e_die "$REFLECT2 missing: run scripts/e2e/deps.sh"
  e2e_log "replacing vendored modern-go/reflect2 1.0.1 with Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
  rm -rf "$TREE/vendor/github.com/modern-go/reflect2"
  mkdir -p "$TREE/vendor/github.com/modern-go/reflect2"
  find "$REFLECT2" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' \
    -exec cp {} "$TREE/vendor/github.com/modern-go/reflect2/" \;
}

gobuild() {
  (cd "$TREE" && GOPATH=$GOPATH_DIR GO111MODULE=off CGO_ENABLED=0 GOCACHE=$E2E_CACHE/gocache \
    GOFLAGS='' go build -p 2 "$@")
}

# Directories whose Go files carry +k8s:openapi-gen tags, as Makefile.generated_files lists them
# for pkg/generated/openapi (KUBE_OPENAPI_TAG_FILES): staging/src is named vendor/, code-generator
# and sample-apiserver are left out.
openapi_inputs() {
  (cd "$TREE" && find . \( -path ./vendor -o -path './_*' -o -path './.*' \) -prune -o \
    -type f -name '*.go' -exec grep -l '^// *+k8s:' {} + | xargs -d '\n' grep -l '+k8s:openapi-gen=' |
    sed -e 's|^\./staging/src|vendor|' -e 's|^\./||' -e 's|/[^/]*$||' | LC_ALL=C sort -u |
    grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' |
    sed "s|^|$KPKG/|" | paste -sd,)
}

generate_openapi() {
  local out=pkg/generated/openapi log=$WORK/openapi-gen.log report=$WORK/openapi-violations.report
  e2e_log "building openapi-gen and generating $out/zz_generated.openapi.go"
  gobuild -o "$WORK/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen >"$log" 2>&1 ||
    e2e_die "building openapi-gen failed; see $log"
  (cd "$TREE" && GOPATH=$GOPATH_DIR GO111MODULE=off "$WORK/openapi-gen" --logtostderr \
    -i "$(openapi_inputs)" -p "$KPKG/$out" -O zz_generated.openapi \
    -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$report") >>"$log" 2>&1 ||
    e2e_die "openapi-gen failed; see $log"
  # The same inputs as upstream give the same known API rule violations.
  diff -q "$report" "$TREE/api/api-rules/violation_exceptions.list" >/dev/null ||
    e2e_log "warning: openapi-gen's violation report differs from upstream's list; see $report"
}

version_ldflags() {
  local f pkg minor=${E2E_K8S_VERSION#*.}
  minor=${minor%%.*}
  for pkg in client-go/pkg/version component-base/version; do
    pkg=$KPKG/vendor/k8s.io/$pkg
    for f in "gitVersion=v$E2E_K8S_VERSION" "gitMajor=${E2E_K8S_VERSION%%.*}" "gitMinor=$minor" \
      gitTreeState=clean "buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; do
      printf -- "-X '%s.%s' " "$pkg" "$f"
    done
  done
}

build_binaries() {
  local b out=$E2E_KUBE_BIN.tmp log
  rm -rf "$out" && mkdir -p "$out"
  for b in "${E2E_KUBE_BINARIES[@]}"; do
    log=$WORK/build-$b.log
    e2e_log "building $b (log: $log)"
    gobuild -tags 'notest providerless dockerless' -ldflags "-s -w $(version_ldflags)" -o "$out/$b" "./cmd/$b" >"$log" 2>&1 ||
      e2e_die "building $b failed; see $log"
  done
  rm -rf "$E2E_KUBE_BIN" && mv "$out" "$E2E_KUBE_BIN"
}

main() {
  if have_binaries; then
    echo "$E2E_KUBE_BIN"
    return
  fi
  command -v go >/dev/null || e2e_die "go not installed: run scripts/e2e/deps.sh"
  local start=$SECONDS
  e2e_log "building Kubernetes $E2E_K8S_VERSION into $E2E_KUBE_BIN ($(go version | cut -d' ' -f3), GOPATH mode)"
  rm -rf "$WORK" && mkdir -p "$WORK"
  fetch_source
  replace_reflect2
  generate_openapi
  build_binaries
  rm -rf "$WORK"
  e2e_log "built ${E2E_KUBE_BINARIES[*]} in $((SECONDS - start)) s"
  echo "$E2E_KUBE_BIN"
}

main "$@"

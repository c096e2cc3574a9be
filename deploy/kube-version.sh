#!/usr/bin/env bash
# deploy/kube-version.sh -- the overlay that makes vgpu's kube-scheduler follow the control plane
# (docs/install.md, step 4, and its version matrix).
#
#   deploy/kube-version.sh [--version vMAJOR.MINOR.PATCH] [--base DIR] OUT_DIR
#   kubectl apply -k OUT_DIR
#
# vgpu-scheduler's pod runs a stock kube-scheduler beside the extender. The version skew policy
# wants it at the control plane's version, and each release reads only some versions of its
# configuration (kubescheduler.config.k8s.io): v1beta1 on 1.20-1.21 (and 1.22), v1beta2 on
# 1.22-1.27, v1beta3 on 1.23-1.28, v1 from 1.25. This writes OUT_DIR/kustomization.yaml, an
# overlay of --base (default deploy/overlays/vgpu; any dialect overlay or your own copy) with
#   - registry.k8s.io/kube-scheduler tagged with the API server's version (its vMAJOR.MINOR.PATCH,
#     a vendor suffix such as -eks-1234 or +k3s1 dropped: the upstream image has none), and
#   - below 1.25, OUT_DIR/scheduler-config.yaml: deploy/base's configuration with the newest
#     apiVersion that release reads (v1beta1 for 1.20-1.21, v1beta2 for 1.22, v1beta3 for
#     1.23-1.24), replacing the base's ConfigMap;
#   - on 1.20, OUT_DIR/pdb.yaml: the webhook's PodDisruptionBudget as policy/v1beta1 (policy/v1
#     is served from 1.21) in place of the base's.
# The version is the API server's (`kubectl get --raw /version`, what `kubectl version` prints
# as the server's), or --version. OUT_DIR is created (or its two files replaced); it prints
# one line saying what it chose. Exit status 2 for bad arguments or a version below 1.20.
set -euo pipefail

DEPLOY=$(cd "$(dirname "$0")" && pwd)
BASE=$DEPLOY/overlays/vgpu
VERSION=
OUT=
# The newest minor release whose config API was checked (docs/install.md's matrix); later
# ones get v1 too, with a note.
NEWEST_CHECKED=37

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
  exit "${1:-2}"
}

die() {
  echo "kube-version.sh: $*" >&2
  exit 2
}

parse_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --version) [ $# -ge 2 ] || die "--version needs a value (e.g. v1.20.2)"; VERSION=$2; shift ;;
      --version=*) VERSION=${1#--version=} ;;
      --base) [ $# -ge 2 ] || die "--base needs a directory"; BASE=$2; shift ;;
      --base=*) BASE=${1#--base=} ;;
      -h | --help) usage 0 ;;
      -*) die "unknown option $1 (see --help)" ;;
      *) [ -z "$OUT" ] || die "one OUT_DIR, got $OUT and $1"; OUT=$1 ;;
    esac
    shift
  done
  [ -n "$OUT" ] || die "no OUT_DIR given (see --help)"
  [ -f "$BASE/kustomization.yaml" ] || die "--base $BASE: no kustomization.yaml there"
}

# The server's gitVersion from GET /version (one JSON object, no other gitVersion in it).
server_version() {
  local json
  json=$(kubectl get --raw /version) || die "cannot read the API server's version (kubectl get --raw /version failed); give --version"
  printf '%s' "$json" | tr -d '\n' | sed -n 's/.*"gitVersion" *: *"\([^"]*\)".*/\1/p'
}

# vMAJOR.MINOR.PATCH of a gitVersion ("v1.29.4-eks-5d4a308" -> v1.29.4), or nothing.
upstream_tag() {
  printf '%s\n' "$1" | sed -n 's/^v\{0,1\}\([0-9][0-9]*\)\.\([0-9][0-9]*\)\.\([0-9][0-9]*\).*/v\1.\2.\3/p'
}

# The newest kubescheduler.config.k8s.io version release 1.MINOR reads.
config_api() {
  local minor=$1
  if [ "$minor" -le 21 ]; then echo v1beta1
  elif [ "$minor" -le 22 ]; then echo v1beta2
  elif [ "$minor" -le 24 ]; then echo v1beta3
  else echo v1
  fi
}

# deploy/base/webhook.yaml's PodDisruptionBudget document, as policy/v1beta1.
pdb_v1beta1() {
  awk '/^---$/ { if (doc ~ /\nkind: PodDisruptionBudget\n/) printf "%s", doc; doc = "\n"; next }
       { doc = doc $0 "\n" }
       END { if (doc ~ /\nkind: PodDisruptionBudget\n/) printf "%s", doc }' "$DEPLOY/base/webhook.yaml" |
    sed -e '/^#/d' -e '/^$/d' -e 's|^apiVersion: policy/v1$|apiVersion: policy/v1beta1|'
}

# The PodDisruptionBudget on 1.20: the base's deleted, pdb.yaml in its place.
write_pdb() {
  pdb_v1beta1 >"$OUT/pdb.yaml"
  grep -q '^apiVersion: policy/v1beta1$' "$OUT/pdb.yaml" ||
    die "deploy/base/webhook.yaml has no policy/v1 PodDisruptionBudget to rewrite"
  cat >"$OUT/pdb-delete.yaml" <<'YAML'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: vgpu-webhook
  namespace: vgpu-system
$patch: delete
YAML
}

write_overlay() {
  local tag=$1 api=$2 minor=$3 rel
  mkdir -p "$OUT"
  rel=$(realpath --relative-to="$OUT" "$BASE")
  rm -f "$OUT/scheduler-config.yaml" "$OUT/pdb.yaml" "$OUT/pdb-delete.yaml"
  {
    echo "# Written by deploy/kube-version.sh for a $tag control plane (docs/install.md, step 4)."
    echo "bases:"
    echo "- $rel"
    echo "images:"
    echo "- name: registry.k8s.io/kube-scheduler"
    echo "  newTag: $tag"
    if [ "$api" != v1 ]; then
      echo "configMapGenerator:"
      echo "- name: vgpu-scheduler-config"
      echo "  namespace: vgpu-system"
      echo "  behavior: replace"
      echo "  files:"
      echo "  - scheduler-config.yaml"
    fi
    if [ "$minor" -lt 21 ]; then
      echo "resources:"
      echo "- pdb.yaml"
      echo "patchesStrategicMerge:"
      echo "- pdb-delete.yaml"
    fi
  } >"$OUT/kustomization.yaml"
  [ "$minor" -ge 21 ] || write_pdb
  if [ "$api" != v1 ]; then
    sed "s|^apiVersion: kubescheduler.config.k8s.io/v1\$|apiVersion: kubescheduler.config.k8s.io/$api|" \
      "$DEPLOY/base/scheduler-config.yaml" >"$OUT/scheduler-config.yaml"
    grep -q "^apiVersion: kubescheduler.config.k8s.io/$api\$" "$OUT/scheduler-config.yaml" ||
      die "deploy/base/scheduler-config.yaml has no 'apiVersion: kubescheduler.config.k8s.io/v1' line to change"
  fi
}

main() {
  parse_args "$@"
  [ -n "$VERSION" ] || VERSION=$(server_version)
  local tag minor api
  tag=$(upstream_tag "$VERSION")
  [ -n "$tag" ] || die "'$VERSION' is not a Kubernetes version (vMAJOR.MINOR.PATCH)"
  [ "${tag%%.*}" = v1 ] || die "$tag: only Kubernetes 1.x is known"
  minor=$(echo "$tag" | cut -d. -f2)
  [ "$minor" -ge 20 ] || die "$tag: vgpu needs Kubernetes 1.20 or later"
  api=$(config_api "$minor")
  write_overlay "$tag" "$api" "$minor"
  local note=""
  [ "$minor" -le "$NEWEST_CHECKED" ] || note=" (newer than 1.$NEWEST_CHECKED, the newest checked: v1 assumed)"
  echo "$OUT: kube-scheduler $tag, kubescheduler.config.k8s.io/$api, over $BASE$note"
}

main "$@"

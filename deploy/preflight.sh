#!/usr/bin/env bash
# deploy/preflight.sh -- checks a cluster is ready for vgpu, before `kubectl apply -k deploy/...`
# (docs/install.md, step 3). Needs kubectl with the cluster's admin credentials; changes nothing
# but one short-lived pod per GPU node, which it deletes.
#
#   deploy/preflight.sh [--node NODE]... [--image IMAGE] [--namespace NS] [--timeout SECONDS]
#
# Checks, one line each (ok / warn / FAIL), exit status 1 when any FAILs:
#   - the API server answers; Kubernetes >= 1.20;
#   - admissionregistration.k8s.io/v1 is served (the webhook); whether MutatingAdmissionPolicy is;
#   - the GPU nodes: those labelled vgpu.io/gpu=true (or each --node), Ready;
#   - no other device plugin already advertises a resource of vgpu's dialects there (NVIDIA's
#     plugin and vgpu's time-slicing dialect cannot both serve nvidia.com/gpu);
#   - on each GPU node, a pod of the node image (the DaemonSet's, from deploy/base) with
#     NVIDIA_VISIBLE_DEVICES=all, as the DaemonSet runs: the NVIDIA container runtime gave it
#     NVML and the GPUs (`vgpu smi` lists them), the kubelet's device-plugin socket and its
#     PodResources socket are where deploy/ mounts them from.
set -euo pipefail

DEPLOY=$(cd "$(dirname "$0")" && pwd)
NAMESPACE=default
TIMEOUT=120
IMAGE=
NODES=()
FAILED=0

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
  exit "${1:-2}"
}

ok() { echo "ok    $*"; }
warn() { echo "warn  $*"; }
fail() {
  echo "FAIL  $*"
  FAILED=1
}

parse_args() {
  while [ $# -gt 0 ]; do
    case $1 in
      --node) NODES+=("${2:?--node needs a name}") && shift 2 ;;
      --image) IMAGE=${2:?--image needs a reference} && shift 2 ;;
      --namespace) NAMESPACE=${2:?--namespace needs a name} && shift 2 ;;
      --timeout) TIMEOUT=${2:?--timeout needs seconds} && shift 2 ;;
      -h | --help) usage 0 ;;
      --version) echo "vgpu preflight (deploy/preflight.sh)" && exit 0 ;;
      *) echo "preflight.sh: unknown argument '$1' (--help lists them)" >&2 && exit 2 ;;
    esac
  done
}

check_api() {
  local v major minor
  if ! v=$(kubectl version -o json 2>/dev/null | sed -n 's/.*"gitVersion": *"v\([0-9.]*\).*/\1/p' | tail -n 1) ||
    [ -z "$v" ]; then
    fail "cannot reach the API server with kubectl (kubectl version): is KUBECONFIG set?"
    exit 1
  fi
  major=${v%%.*} && minor=${v#*.} && minor=${minor%%.*}
  if [ "$major" -gt 1 ] || [ "$minor" -ge 20 ]; then
    ok "Kubernetes $v (>= 1.20)"
  else
    fail "Kubernetes $v: vgpu needs 1.20 or later"
  fi
  if [ "$minor" -lt 25 ]; then
    warn "Kubernetes $v reads kube-scheduler configuration v1beta1..v1beta3, not the v1 of deploy/base: use the old-Kubernetes overlay settings of docs/install.md"
  fi
  local groups
  groups=$(kubectl api-versions)
  if grep -qx admissionregistration.k8s.io/v1 <<<"$groups"; then
    ok "admissionregistration.k8s.io/v1 served (the vgpu-webhook)"
  else
    fail "admissionregistration.k8s.io/v1 not served: the vgpu-webhook cannot be registered"
  fi
  if grep -q '^admissionregistration.k8s.io/v1\(alpha1\|beta1\)$' <<<"$groups" &&
    kubectl api-resources --api-group=admissionregistration.k8s.io -o name 2>/dev/null | grep -q '^mutatingadmissionpolicies'; then
    ok "MutatingAdmissionPolicy served: deploy/admission-policy can replace the webhook"
  else
    ok "MutatingAdmissionPolicy not served: use the webhook (deploy/base)"
  fi
}

# The GPU nodes: --node names, else the nodes labelled vgpu.io/gpu=true.
find_nodes() {
  if [ ${#NODES[@]} -eq 0 ]; then
    mapfile -t NODES < <(kubectl get nodes -l vgpu.io/gpu=true -o name | sed 's|^node/||')
  fi
  if [ ${#NODES[@]} -eq 0 ]; then
    fail "no node is labelled vgpu.io/gpu=true (kubectl label node NODE vgpu.io/gpu=true), and no --node given"
    return
  fi
  local n ready
  for n in "${NODES[@]}"; do
    ready=$(kubectl get node "$n" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) ||
      { fail "node $n does not exist" && continue; }
    [ "$ready" = True ] && ok "node $n is Ready" || fail "node $n is not Ready ($ready)"
  done
}

# Resources of vgpu's dialects that some other device plugin already advertises on node $1.
check_foreign_plugins() {
  local n=$1 taken
  taken=$(kubectl get node "$n" -o jsonpath='{.status.capacity}' |
    grep -o '"\(nvidia.com/gpu\|nvidia.com/vgpu\|aliyun.com/gpu-mem\|volcano.sh/gpu-mem.128Mi\)": *"[1-9][0-9]*"' |
    tr '\n' ' ') || true
  if [ -n "$taken" ] && ! kubectl get pods -A -l app.kubernetes.io/name=vgpu-device-plugin \
    --field-selector "spec.nodeName=$n" -o name 2>/dev/null | grep -q .; then
    warn "node $n already has $taken from another device plugin: stop it, or enable only other dialects (docs/configuration.md)"
  else
    ok "node $n: no other device plugin serves vgpu's resources"
  fi
}

# The node image of deploy/base's DaemonSet (kustomize's rendering, with its images: entries).
node_image() {
  [ -z "$IMAGE" ] || { echo "$IMAGE" && return; }
  kubectl kustomize "$DEPLOY/base" | awk '
    /^---/ { kind = "" } /^kind:/ { kind = $2 }
    kind == "DaemonSet" && $1 == "image:" { print $2; exit }
    kind == "DaemonSet" && $1 == "-" && $2 == "image:" { print $3; exit }'
}

NODE_SCRIPT='set -e
test -S /var/lib/kubelet/device-plugins/kubelet.sock && echo "ok    kubelet device-plugin socket" ||
  echo "FAIL  no /var/lib/kubelet/device-plugins/kubelet.sock: is the kubelet'"'"'s root elsewhere?"
test -S /var/lib/kubelet/pod-resources/kubelet.sock && echo "ok    kubelet PodResources socket" ||
  echo "FAIL  no /var/lib/kubelet/pod-resources/kubelet.sock (kubelet >= 1.15 serves it)"
if out=$(vgpu smi 2>&1); then
  n=$(echo "$out" | grep -c "^| *[0-9][0-9]* ")
  [ "$n" -gt 0 ] && echo "ok    NVML through the container runtime: $n GPU(s)" ||
    echo "FAIL  vgpu smi saw no GPU: $out"
else
  echo "FAIL  no NVML in a container with NVIDIA_VISIBLE_DEVICES=all (is the NVIDIA container runtime the default runtime?): $out"
fi'

# A pod of the node image on node $1 (bypassing the scheduler, as a DaemonSet pod) runs NODE_SCRIPT.
check_node() {
  local n=$1 image=$2 pod out phase
  pod=vgpu-preflight-$(printf %s "$n" | tr -c 'a-z0-9-' '-' | cut -c1-40)-$$
  kubectl -n "$NAMESPACE" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  labels: {app.kubernetes.io/name: vgpu-preflight}
spec:
  nodeName: $n
  restartPolicy: Never
  tolerations: [{operator: Exists}]
  containers:
  - name: check
    image: $image
    command:
    - /bin/sh
    - -c
    - |
$(sed 's/^/      /' <<<"$NODE_SCRIPT")
    env:
    - {name: NVIDIA_VISIBLE_DEVICES, value: all}
    - {name: NVIDIA_DRIVER_CAPABILITIES, value: utility}
    volumeMounts:
    - {name: device-plugins, mountPath: /var/lib/kubelet/device-plugins, readOnly: true}
    - {name: pod-resources, mountPath: /var/lib/kubelet/pod-resources, readOnly: true}
  volumes:
  - {name: device-plugins, hostPath: {path: /var/lib/kubelet/device-plugins, type: Directory}}
  - {name: pod-resources, hostPath: {path: /var/lib/kubelet/pod-resources, type: Directory}}
EOF
  local deadline=$((SECONDS + TIMEOUT))
  while phase=$(kubectl -n "$NAMESPACE" get pod "$pod" -o jsonpath='{.status.phase}' 2>/dev/null) &&
    [ "$phase" != Succeeded ] && [ "$phase" != Failed ] && [ $SECONDS -lt $deadline ]; do
    sleep 1
  done
  out=$(kubectl -n "$NAMESPACE" logs "$pod" 2>&1 || true)
  if [ "$phase" != Succeeded ]; then
    fail "node $n: the check pod ($image) did not complete (phase ${phase:-unknown}): $(kubectl -n "$NAMESPACE" describe pod "$pod" 2>&1 | tail -n 8 | tr -s ' \n' ' ') $out"
  else
    echo "$out" | sed "s/^\(ok\|FAIL\|warn\)\( *\)/\1\2node $n: /"
    ! grep -q '^FAIL' <<<"$out" || FAILED=1
  fi
  kubectl -n "$NAMESPACE" delete pod "$pod" --wait=false >/dev/null 2>&1 || true
}

main() {
  parse_args "$@"
  check_api
  find_nodes
  local image n
  image=$(node_image)
  [ -n "$image" ] || { fail "cannot tell the node image from $DEPLOY/base (give --image)" && exit 1; }
  for n in "${NODES[@]}"; do
    check_foreign_plugins "$n"
    check_node "$n" "$image"
  done
  [ "$FAILED" -eq 0 ] && echo "preflight: ready for vgpu" || echo "preflight: fix the FAIL lines first"
  return "$FAILED"
}

main "$@"

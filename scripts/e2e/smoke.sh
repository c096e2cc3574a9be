#!/usr/bin/env bash
# Smoke test of the e2e cluster (cluster.sh): brings it up, runs a plain pod from the workload
# image on the pod network that echoes a line, checks `kubectl logs`, `kubectl exec`, that the pod
# reaches the node over the bridge and that `kubectl create token` works, deletes the pod and
# brings the cluster down (also on failure). Exits non-zero, with the pod's state printed, when a
# step fails. Needs root; tears down a cluster that is already up.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CLUSTER=$E2E_DIR/cluster.sh
POD=vgpu-e2e-smoke

show_pod() {
  echo "---- pod $POD ----" >&2
  kubectl get pod "$POD" -o wide >&2 || true
  kubectl describe pod "$POD" >&2 || true
  kubectl get events --sort-by=.lastTimestamp >&2 || true
}

fail() {
  show_pod
  e2e_die "smoke: $*"
}

run_pod() {
  kubectl apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $POD
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: $E2E_WORKLOAD_IMAGE
    imagePullPolicy: Never
    command: [sh, -c, 'echo "smoke says hello from \$(hostname)"; exec sleep 3600']
YAML
  kubectl wait --for=condition=Ready "pod/$POD" --timeout=120s || fail "pod not Ready within 120 s"
}

check_pod() {
  local ip out
  ip=$(kubectl get pod "$POD" -o jsonpath='{.status.podIP}')
  [ "$(kubectl get pod "$POD" -o jsonpath='{.spec.hostNetwork}')" != true ] || fail "pod is on the host network"
  case $ip in "${VGPU_E2E_NODE_IP%.*}".*) ;; *) fail "pod IP '$ip' is not on the bridge's subnet" ;; esac
  out=$(kubectl logs "$POD") || fail "kubectl logs failed"
  [ "$out" = "smoke says hello from $POD" ] || fail "kubectl logs printed '$out'"
  # shellcheck disable=SC2016 # $(hostname) runs in the pod
  out=$(kubectl exec "$POD" -- sh -c 'echo exec in $(hostname)') || fail "kubectl exec failed"
  [ "$out" = "exec in $POD" ] || fail "kubectl exec printed '$out'"
  kubectl exec "$POD" -- ping -c 1 -W 5 "$VGPU_E2E_NODE_IP" >/dev/null || fail "the pod cannot reach the node at $VGPU_E2E_NODE_IP"
  [ -n "$(kubectl create token default)" ] || fail "kubectl create token default printed nothing"
  e2e_log "smoke: pod $POD at $ip: logs, exec, ping to the node and create token work"
}

main() {
  e2e_need_root smoke.sh
  trap '"$CLUSTER" down' EXIT
  "$CLUSTER" up
  eval "$("$CLUSTER" env)"
  "$E2E_DIR/images.sh" workload "$E2E_IMAGES/workload-smoke.tar"
  "$E2E_DIR/images.sh" import "$E2E_IMAGES/workload-smoke.tar"
  run_pod
  check_pod
  kubectl delete pod "$POD" --wait --timeout=60s || fail "deleting the pod failed"
  e2e_log "smoke: passed"
}

main "$@"

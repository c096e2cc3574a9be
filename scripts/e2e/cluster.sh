#!/usr/bin/env bash
# A real single-node Kubernetes 1.20.2 on this machine, for the end-to-end tests (make e2e):
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd and the kubelet, all
# with their state under $VGPU_E2E_STATE (default /tmp/vgpu-e2e) and built from Debian's packages
# (build-k8s.sh, images.sh). Needs root.
#
#   cluster.sh up               down (if anything is left), then start everything; waits until the
#                               Node is Ready and untainted and `default` has its ServiceAccount
#   cluster.sh up-control-plane  down (if anything is left), then etcd and kube-apiserver only (the
#                               PKI, admin and scheduler kubeconfigs): no kubelet, containerd,
#                               controller-manager, and nothing changed on the host; for benches
#                               that create kubelet-less Nodes (bench/kube-replay.sh). Add
#                               kube-scheduler with restart-scheduler; `down` stops it all
#   cluster.sh down             stop what `up` started (by recorded pid only), unmount, remove the
#                               bridge and the state dir; safe to run twice or after a failed up
#   cluster.sh env              shell `export` lines for tests: eval "$(cluster.sh env)"
#   cluster.sh restart-kubelet  stop and start the kubelet with the same arguments, wait Ready
#   cluster.sh restart-scheduler  the same for kube-scheduler (picks up VGPU_E2E_SCHEDULER_CONFIG)
#   cluster.sh status           each component's pid and the Node's conditions; non-zero if one is down
#
# Environment: VGPU_E2E_RUNTIME (runc wrapper containerd runs instead of runc),
# VGPU_E2E_SCHEDULER_CONFIG (a KubeSchedulerConfiguration file for kube-scheduler --config; it
# must name its own clientConnection.kubeconfig, e.g. $KUBECONFIG from `env`),
# VGPU_E2E_TIMEOUT (seconds each wait may take, default 180). Logs: $VGPU_E2E_STATE/logs/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

NODE=vgpu-e2e-node
BRIDGE=vgpue2e0
NODE_IP=10.211.0.1
POD_SUBNET=10.211.0.0/24
SERVICE_RANGE=10.212.0.0/24
ETCD_PORT=12379
APISERVER_PORT=16443
KUBELET_PORT=11250
KUBELET_HEALTHZ_PORT=11248
CONTROLLER_MANAGER_PORT=11257
SCHEDULER_PORT=11259
REGISTRY_PORT=$E2E_REGISTRY_PORT
# The `kubernetes` Service's ClusterIP (the first address of SERVICE_RANGE), which in-cluster
# clients (our DaemonSet and Deployments) dial on port 443.
SERVICE_IP=10.212.0.1
SA_ISSUER=https://kubernetes.default.svc.cluster.local
CGROUP_PARENT=vgpu-e2e
TIMEOUT=${VGPU_E2E_TIMEOUT:-180}

PKI=$E2E_STATE/pki
KCFG=$E2E_STATE/kubeconfig
LOGS=$E2E_STATE/logs
PIDS=$E2E_STATE/pids
KUBELET_ROOT=$E2E_STATE/kubelet
CONTAINERD_DIR=$E2E_STATE/containerd
CNI_DIR=$E2E_STATE/cni
ADMIN_KUBECONFIG=$KCFG/admin.kubeconfig
APISERVER_URL=https://127.0.0.1:$APISERVER_PORT

. "$E2E_DIR/cluster-procs.sh"
. "$E2E_DIR/cluster-pki.sh"
. "$E2E_DIR/cluster-config.sh"
. "$E2E_DIR/cluster-host.sh"

kubectl_admin() { kubectl --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=10s "$@"; }

# Fails early when VGPU_E2E_RUNTIME or VGPU_E2E_SCHEDULER_CONFIG names no usable file.
check_inputs() {
  [ -z "${VGPU_E2E_RUNTIME:-}" ] || [ -x "$VGPU_E2E_RUNTIME" ] ||
    e2e_die "VGPU_E2E_RUNTIME=$VGPU_E2E_RUNTIME is not an executable file"
  [ -z "${VGPU_E2E_SCHEDULER_CONFIG:-}" ] || [ -f "$VGPU_E2E_SCHEDULER_CONFIG" ] ||
    e2e_die "VGPU_E2E_SCHEDULER_CONFIG=$VGPU_E2E_SCHEDULER_CONFIG is not a file"
}

# ---- the components, in start order ----

start_etcd() {
  start_proc etcd etcd --name vgpu-e2e --data-dir "$E2E_STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "vgpu-e2e=http://127.0.0.1:$((ETCD_PORT + 1))"
  wait_for etcd "etcd on 127.0.0.1:$ETCD_PORT" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  start_proc kube-apiserver "$E2E_KUBE_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" --insecure-port 0 \
    --enable-aggregator-routing=true --advertise-address "$NODE_IP" --service-cluster-ip-range "$SERVICE_RANGE" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction --allow-privileged=true \
    --service-account-issuer "$SA_ISSUER" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-key-file "$PKI/sa.pub" --api-audiences "$SA_ISSUER" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
    --profiling=false --v 1
  wait_for kube-apiserver "kube-apiserver at $APISERVER_URL/readyz" \
    kubectl_admin get --raw /readyz
}

start_controller_manager() {
  start_proc kube-controller-manager "$E2E_KUBE_BIN/kube-controller-manager" \
    --kubeconfig "$KCFG/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$KCFG/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$KCFG/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" --port 0 \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --use-service-account-credentials --service-cluster-ip-range "$SERVICE_RANGE" \
    --leader-elect=false --v 1
  wait_for kube-controller-manager "kube-controller-manager's /healthz" \
    curl -fsSk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
}

start_scheduler() {
  local args=(--kubeconfig "$KCFG/scheduler.kubeconfig")
  check_inputs
  [ -z "${VGPU_E2E_SCHEDULER_CONFIG:-}" ] || args=(--config "$VGPU_E2E_SCHEDULER_CONFIG")
  start_proc kube-scheduler "$E2E_KUBE_BIN/kube-scheduler" "${args[@]}" \
    --authentication-kubeconfig "$KCFG/scheduler.kubeconfig" \
    --authorization-kubeconfig "$KCFG/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --port 0 --leader-elect=false --v 1
  wait_for kube-scheduler "kube-scheduler's /healthz" curl -fsSk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

# A local image registry (Debian's docker-registry) that containerd uses as the mirror of
# docker.io and nvcr.io: the seeds' pod specs name public images (one with tag `latest`, which the
# kubelet always pulls), and nothing public can be reached; their stand-ins are pushed here.
start_registry() {
  mkdir -p "$E2E_STATE/registry"
  printf '%s\n' "version: 0.1" "storage:" "  filesystem:" "    rootdirectory: $E2E_STATE/registry" \
    "http:" "  addr: 127.0.0.1:$REGISTRY_PORT" "log:" "  level: warn" >"$E2E_STATE/registry.yml"
  start_proc docker-registry docker-registry serve "$E2E_STATE/registry.yml"
  wait_for docker-registry "the registry at 127.0.0.1:$REGISTRY_PORT" curl -fsS "http://127.0.0.1:$REGISTRY_PORT/v2/"
}

start_containerd() {
  start_proc containerd containerd --config "$CONTAINERD_DIR/config.toml"
  containerd_cgroup "$(proc_pid containerd)"
  wait_for containerd "containerd at $E2E_CONTAINERD_SOCK" e2e_ctr version
  "$E2E_DIR/images.sh" pause
  "$E2E_DIR/images.sh" import "$E2E_IMAGES/pause.tar"
}

start_kubelet() {
  start_proc kubelet "$E2E_KUBE_BIN/kubelet" --config "$E2E_STATE/kubelet-config.yaml" \
    --kubeconfig "$KCFG/kubelet-client.kubeconfig" --root-dir "$KUBELET_ROOT" \
    --container-runtime remote --container-runtime-endpoint "unix://$E2E_CONTAINERD_SOCK" \
    --image-service-endpoint "unix://$E2E_CONTAINERD_SOCK" \
    --pod-infra-container-image "$E2E_PAUSE_IMAGE" \
    --hostname-override "$NODE" --node-ip "$NODE_IP" --v 2
  wait_for kubelet "the kubelet's /healthz" curl -fsS "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
}

# ---- waits on the cluster ----

# The Node's Ready condition is True, it has no taints, and (with an argument) its last heartbeat
# is no older than that time (seconds since the epoch).
node_ready() {
  kubectl_admin get node "$NODE" -o json | jq -e --argjson since "${1:-0}" '
    ([.status.conditions[] | select(.type == "Ready" and .status == "True")
      | select((.lastHeartbeatTime | fromdateiso8601) >= $since)] | length == 1)
    and ((.spec.taints // []) | length == 0)'
}

show_node() { kubectl_admin get node "$NODE" -o yaml; }

wait_node_ready() {
  WAIT_DIAG=show_node wait_for kubelet "node $NODE to be Ready and untainted" node_ready "$@"
}

# ---- verbs ----

# A marker in the state dir: this cluster changed nothing on the host, so down must not undo the
# host setup (another cluster's, perhaps: the bridge, the DNAT rule and the cgroup have fixed names).
CONTROL_PLANE_ONLY=control-plane-only

cluster_up() {
  local start=$SECONDS
  check_inputs
  "$E2E_DIR/deps.sh"
  "$E2E_DIR/build-k8s.sh" >/dev/null
  [ ! -d "$E2E_STATE" ] || cluster_down
  e2e_log "starting the cluster in $E2E_STATE"
  mkdir -p "$E2E_STATE" "$LOGS" "$PIDS"
  host_setup
  make_pki
  for k in admin controller-manager scheduler kubelet-client; do make_kubeconfig "$k"; done
  write_containerd_config
  write_cni_config
  write_kubelet_config
  start_etcd
  start_apiserver
  start_controller_manager
  start_scheduler
  start_registry
  start_containerd
  start_kubelet
  wait_node_ready
  wait_for kube-controller-manager "the default ServiceAccount in namespace default" \
    kubectl_admin -n default get serviceaccount default
  e2e_log "cluster up in $((SECONDS - start)) s; use: eval \"\$($0 env)\""
}

control_plane_up() {
  local start=$SECONDS
  "$E2E_DIR/deps.sh"
  "$E2E_DIR/build-k8s.sh" >/dev/null
  [ ! -d "$E2E_STATE" ] || cluster_down
  e2e_log "starting a control plane in $E2E_STATE"
  mkdir -p "$E2E_STATE" "$LOGS" "$PIDS"
  : >"$E2E_STATE/$CONTROL_PLANE_ONLY"
  make_pki
  for k in admin scheduler; do make_kubeconfig "$k"; done
  start_etcd
  start_apiserver
  e2e_log "control plane up in $((SECONDS - start)) s; admin kubeconfig $ADMIN_KUBECONFIG"
}

cluster_down() {
  if [ ! -d "$E2E_STATE" ]; then
    e2e_log "no cluster state at $E2E_STATE: nothing to stop"
    return 0
  fi
  local start=$SECONDS
  stop_proc kubelet
  stop_proc kube-scheduler
  stop_proc kube-controller-manager
  containers_stop
  stop_proc containerd
  stop_proc docker-registry
  stop_proc kube-apiserver
  stop_proc etcd
  [ -f "$E2E_STATE/$CONTROL_PLANE_ONLY" ] || host_teardown
  rm -rf "$E2E_STATE"
  e2e_log "cluster down in $((SECONDS - start)) s"
}

restart_kubelet() {
  proc_alive kube-apiserver || e2e_die "the cluster is not up (no kube-apiserver); run cluster.sh up"
  local since
  stop_proc kubelet
  since=$(date +%s)
  start_kubelet
  wait_for kubelet "the kubelet's device plugin socket" test "$KUBELET_ROOT/device-plugins/kubelet.sock" -nt "$PIDS/kubelet.cmd"
  wait_node_ready "$since"
}

restart_scheduler() {
  proc_alive kube-apiserver || e2e_die "the cluster is not up (no kube-apiserver); run cluster.sh up"
  stop_proc kube-scheduler
  start_scheduler
}

cluster_env() {
  local v
  for v in "VGPU_E2E_STATE=$E2E_STATE" "VGPU_E2E_KUBE_BIN=$E2E_KUBE_BIN" \
    "KUBECONFIG=$ADMIN_KUBECONFIG" "VGPU_E2E_APISERVER=$APISERVER_URL" "VGPU_E2E_CA=$PKI/ca.crt" \
    "VGPU_E2E_NODE=$NODE" "VGPU_E2E_NODE_IP=$NODE_IP" "VGPU_E2E_KUBELET_ROOT=$KUBELET_ROOT" \
    "VGPU_E2E_CONTAINERD_SOCK=$E2E_CONTAINERD_SOCK" "VGPU_E2E_REGISTRY=127.0.0.1:$REGISTRY_PORT" \
    "VGPU_E2E_CTR=ctr --address $E2E_CONTAINERD_SOCK -n k8s.io"; do
    v=${v//\'/\'\\\'\'} # single quotes, each ' in the value written as '\''
    printf "export %s='%s'\n" "${v%%=*}" "${v#*=}"
  done
}

cluster_status() {
  local c pid bad=0
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler docker-registry containerd kubelet; do
    pid=$(proc_pid "$c")
    if [ -n "$pid" ]; then
      echo "$c: running (pid $pid)"
    else
      echo "$c: not running"
      bad=1
    fi
  done
  if proc_alive kube-apiserver; then
    kubectl_admin get node "$NODE" -o json 2>/dev/null |
      jq -r '.status.conditions[] | "node \(.type): \(.status) (\(.reason))"' || echo "node $NODE: not registered"
  fi
  return $bad
}

main() {
  case ${1:-} in
    up) e2e_need_root "cluster.sh up" && cluster_up ;;
    up-control-plane) e2e_need_root "cluster.sh up-control-plane" && control_plane_up ;;
    down) e2e_need_root "cluster.sh down" && cluster_down ;;
    env) cluster_env ;;
    restart-kubelet) e2e_need_root "cluster.sh restart-kubelet" && restart_kubelet ;;
    restart-scheduler) e2e_need_root "cluster.sh restart-scheduler" && restart_scheduler ;;
    status) cluster_status ;;
    *)
      sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
      exit 2
      ;;
  esac
}

main "$@"

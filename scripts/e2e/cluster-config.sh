# shellcheck shell=bash
# Configuration files of cluster.sh (sourced): containerd's, the CNI network's and the kubelet's.

# containerd 1.6, config version 2, everything under $CONTAINERD_DIR:
# - restrict_oom_score_adj: without CAP_SYS_RESOURCE a container may not get an oom_score_adj
#   below containerd's own (the kubelet asks -997 for Guaranteed pods), so it is clamped;
# - cgroupfs (no systemd here), overlayfs snapshots, the local pause image;
# - docker.io and nvcr.io come from the local registry (start_registry);
# - runc's BinaryName is $VGPU_E2E_RUNTIME when set (the tests' runc wrapper).
write_containerd_config() {
  local binary=runc
  [ -z "${VGPU_E2E_RUNTIME:-}" ] || binary=$VGPU_E2E_RUNTIME
  mkdir -p "$CONTAINERD_DIR"
  cat >"$CONTAINERD_DIR/config.toml" <<EOF
version = 2
root = "$CONTAINERD_DIR/root"
state = "$CONTAINERD_DIR/state"
oom_score = 0

[grpc]
  address = "$E2E_CONTAINERD_SOCK"

[ttrpc]
  address = "$CONTAINERD_DIR/containerd.sock.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CONTAINERD_DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$E2E_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  max_container_log_line_size = 16384

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$binary"
        Root = "$CONTAINERD_DIR/runc"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["http://127.0.0.1:$REGISTRY_PORT"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."nvcr.io"]
    endpoint = ["http://127.0.0.1:$REGISTRY_PORT"]

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_DIR/net.d"
    max_conf_num = 1
EOF
}

# One bridge network on $BRIDGE (made by cluster.sh with the node IP as its address and the pods'
# gateway), host-local addresses from $POD_SUBNET kept under $CNI_DIR. No masquerading and no
# forwarding: pods reach the node and each other, not the outside. One route, to the Service range
# through the node, where the `kubernetes` Service's DNAT waits (cluster-host.sh).
write_cni_config() {
  local prefix=${POD_SUBNET%.*}
  [ -x /usr/lib/cni/bridge ] || e2e_die "/usr/lib/cni/bridge missing: run scripts/e2e/deps.sh (containernetworking-plugins)"
  mkdir -p "$CNI_DIR/net.d" "$CNI_DIR/ipam"
  cat >"$CNI_DIR/net.d/10-vgpu-e2e.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "vgpu-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET", "rangeStart": "$prefix.10", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "$SERVICE_RANGE", "gw": "$NODE_IP"}],
        "dataDir": "$CNI_DIR/ipam"
      }
    }
  ]
}
EOF
}

# The kubelet: serves on the node IP (the apiserver reaches it there for logs and exec), x509 +
# webhook authentication, cgroupfs under /$CGROUP_PARENT, no swap check, eviction and image GC
# kept out of the way of a test run, and every directory under $KUBELET_ROOT.
write_kubelet_config() {
  mkdir -p "$KUBELET_ROOT"
  cat >"$E2E_STATE/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_PARENT
failSwapOn: false
# Nothing in the host's iptables: no kube-proxy runs, and the machine is shared.
makeIPTablesUtilChains: false
# The kubelet would lower its own oom_score_adj to -999, which needs CAP_SYS_RESOURCE.
oomScoreAdj: 0
volumePluginDir: $KUBELET_ROOT/volume-plugins
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
}

# shellcheck shell=bash
# What cluster.sh changes on the host besides its processes (sourced): the bridge that carries the
# node IP and the pods, the cgroup parent of the pods, a shared bind mount of the state dir, the
# few directories the kubelet and containerd insist on creating outside it; and the undoing of all
# of that on down, including the pods' containers, network namespaces and mounts.

# Directories outside the state dir the kubelet, containerd and the CNI plugins create at fixed
# paths; those that did not exist before up are removed by down (emptied ones only for /run).
# /var/lib/vgpu and /usr/local/vgpu are made by vgpu's DaemonSet (its hostPaths); the e2e's
# uninstall step removes them as docs/install.md says, and this is the backstop of a failed run.
HOST_DIRS=(/var/log/pods /var/log/containers /var/lib/cni /var/lib/kubelet /run/containerd /run/netns
  /var/lib/vgpu /usr/local/vgpu)
# The kubelet 1.20 serves device plugins at /var/lib/kubelet/device-plugins whatever its
# --root-dir, and the PodResources socket under --root-dir: both directories are bind mounts of
# $KUBELET_ROOT's, so both names are one directory and deploy/'s hostPaths hold unchanged.
KUBELET_DIRS=(device-plugins pod-resources)

# Every v1 cgroup hierarchy (cpu, memory, pids, name=systemd...), not the unified one.
cgroup_roots() {
  awk '$3 == "cgroup" { print $2 }' /proc/self/mounts
}

setup_bridge() {
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    e2e_log "removing a leftover $BRIDGE"
    ip link del "$BRIDGE"
  fi
  ip link add "$BRIDGE" type bridge || e2e_die "cannot create bridge $BRIDGE (ip link add ... type bridge)"
  echo "$BRIDGE" >"$E2E_STATE/bridge"
  ip addr add "$NODE_IP/${POD_SUBNET#*/}" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# /$CGROUP_PARENT in every hierarchy (the kubelet's cgroupRoot must exist); cpuset needs its
# cpus and mems filled in before anything can join it.
setup_cgroups() {
  local root
  for root in $(cgroup_roots); do
    mkdir -p "$root/$CGROUP_PARENT"
    if [ -f "$root/cpuset.cpus" ]; then
      cat "$root/cpuset.cpus" >"$root/$CGROUP_PARENT/cpuset.cpus"
      cat "$root/cpuset.mems" >"$root/$CGROUP_PARENT/cpuset.mems"
    fi
  done
}

# Moves pid $1 (containerd, just started) into /$CGROUP_PARENT/containerd of the pids hierarchy,
# so its shims, which outlive it, are found and stopped by down.
containerd_cgroup() {
  local root=/sys/fs/cgroup/pids
  [ -d "$root/$CGROUP_PARENT" ] || root=$(cgroup_roots | head -n 1)
  mkdir -p "$root/$CGROUP_PARENT/containerd"
  echo "$1" >"$root/$CGROUP_PARENT/containerd/cgroup.procs"
}

host_setup() {
  local d
  for d in "${HOST_DIRS[@]}"; do [ -e "$d" ] || echo "$d" >>"$E2E_STATE/created-dirs"; done
  # A shared mount, so mounts with propagation (kubelet volumes, mountPropagation) work.
  mount --bind "$E2E_STATE" "$E2E_STATE"
  mount --make-rshared "$E2E_STATE"
  for d in "${KUBELET_DIRS[@]}"; do
    mkdir -p "$KUBELET_ROOT/$d" "/var/lib/kubelet/$d"
    mount --bind "$KUBELET_ROOT/$d" "/var/lib/kubelet/$d"
    echo "/var/lib/kubelet/$d" >>"$E2E_STATE/host-mounts"
  done
  setup_bridge
  setup_cgroups
  setup_service_nat
}

# What kube-proxy would do for the one Service our pods dial (this cluster runs no kube-proxy):
# the `kubernetes` ClusterIP, port 443, leads to the API server, from pods (PREROUTING) and from
# the node (OUTPUT). The API server reaches Services itself (webhooks) through their endpoints
# (--enable-aggregator-routing), so no other rule is needed.
NAT_RULE=(-d "$SERVICE_IP" -p tcp --dport 443 -m comment --comment vgpu-e2e -j DNAT
  --to-destination "$NODE_IP:$APISERVER_PORT")
setup_service_nat() {
  local chain
  for chain in PREROUTING OUTPUT; do
    iptables -t nat -A "$chain" "${NAT_RULE[@]}" ||
      e2e_die "cannot add the $SERVICE_IP:443 DNAT rule (iptables -t nat)"
    echo "$chain" >>"$E2E_STATE/nat-chains"
  done
}

remove_service_nat() {
  local chain
  [ -f "$E2E_STATE/nat-chains" ] || return 0
  while read -r chain; do
    iptables -t nat -D "$chain" "${NAT_RULE[@]}" 2>/dev/null || e2e_log "warning: no DNAT rule in $chain to remove"
  done <"$E2E_STATE/nat-chains"
}

# While containerd still runs: remember the pods' network namespaces, kill and delete every task.
containers_stop() {
  proc_alive containerd || return 0
  local id
  for id in $(e2e_ctr containers ls -q 2>/dev/null); do
    e2e_ctr containers info "$id" 2>/dev/null |
      jq -r '.Spec.linux.namespaces[]? | select(.type == "network") | .path // empty'
  done | grep '^/\(var/\)\{0,1\}run/netns/' | sort -u >>"$E2E_STATE/netns" || true
  for id in $(e2e_ctr tasks ls -q 2>/dev/null); do
    e2e_ctr tasks delete --force "$id" >/dev/null 2>&1 || e2e_log "warning: ctr tasks delete --force $id failed"
  done
}

# After containerd: every process left in /$CGROUP_PARENT gets SIGKILL: the pods' containers
# (kubepods/...) and containerd's shims (they inherit containerd's cgroup, see containerd_cgroup).
kill_leftovers() {
  local root pid n=0
  for root in $(cgroup_roots); do
    [ -d "$root/$CGROUP_PARENT" ] || continue
    while read -r pid; do
      kill -KILL "$pid" 2>/dev/null && n=$((n + 1))
    done < <(find "$root/$CGROUP_PARENT" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done
  [ "$n" -eq 0 ] || { e2e_log "killed $n leftover processes in /$CGROUP_PARENT" && sleep 1; }
}

# Mount points under the state dir (or given paths' prefix), deepest first.
mounts_under() {
  awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

unmount_all() {
  local m f
  if [ -f "$E2E_STATE/host-mounts" ]; then
    while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
      [ -z "$(mounts_under "$m")" ] || e2e_die "cannot unmount $m (bind mount of the state dir); not removing anything"
    done <"$E2E_STATE/host-mounts"
  fi
  for m in $(mounts_under "$E2E_STATE"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || e2e_log "warning: cannot unmount $m"
  done
  if [ -f "$E2E_STATE/netns" ]; then
    while read -r f; do
      umount "$f" 2>/dev/null || true
      rm -f "$f"
    done <"$E2E_STATE/netns"
  fi
}

remove_cgroups() {
  local root
  for root in $(cgroup_roots); do
    [ -d "$root/$CGROUP_PARENT" ] || continue
    find "$root/$CGROUP_PARENT" -depth -type d -exec rmdir {} + 2>/dev/null ||
      e2e_log "warning: cannot remove $root/$CGROUP_PARENT (processes left in it?)"
  done
}

remove_host_dirs() {
  local d
  [ -f "$E2E_STATE/created-dirs" ] || return 0
  while read -r d; do
    case $d in
      /run/*) [ ! -d "$d" ] || find "$d" -depth -type d -empty -delete ;;
      *) rm -rf "$d" ;;
    esac
  done <"$E2E_STATE/created-dirs"
}

host_teardown() {
  kill_leftovers
  unmount_all
  [ -z "$(mounts_under "$E2E_STATE")" ] ||
    e2e_die "mounts left under $E2E_STATE, not removing it: $(mounts_under "$E2E_STATE" | tr '\n' ' ')"
  remove_cgroups
  remove_service_nat
  if [ -f "$E2E_STATE/bridge" ] && ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link del "$BRIDGE" && e2e_log "removed bridge $BRIDGE"
  fi
  remove_host_dirs
}

# Per-node configuration and daemons (sourced by hack/lab/lab.sh after lib.sh
# and versions.sh).

# containerd: Debian's 1.6 (the distribution's package, already built and
# tested with its runc; kubelet 1.36 still serves a CRI without RuntimeConfig).
# The sandbox image is the lab's pause; cgroupfs, not systemd; CNI binaries
# from the node's /opt/cni/bin (Debian's plugins and the flannel plugin).
# restrict_oom_score_adj: this machine withholds CAP_SYS_RESOURCE (CapBnd
# 0x1fffeffffff lacks bit 24), so no process may lower its oom_score_adj and
# runc's init dies writing a sandbox's -998 ("nsexec: failed to update
# /proc/self/oom_score_adj: Permission denied", seen as "can't get final
# child's PID from pipe: EOF"); containerd then clamps to its own (0).
lab_containerd_config() {
  local n=$1 dir; dir=$(nodedir "$n")
  cat > "$dir/root/etc/containerd/config.toml" <<TOML
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
TOML
  # Debian's plugins (bridge, host-local, portmap...); flannel's own is
  # installed by its DaemonSet's init container, as on any flannel node.
  local p
  for p in /usr/lib/cni/*; do ln -sf "$p" "$dir/root/opt/cni/bin/"; done
}

lab_containerd() {
  local n=$1 i
  lab_containerd_config "$n"
  lab_start "$n" containerd containerd --config /etc/containerd/config.toml
  for i in $(seq 100); do
    nodeexec "$n" ctr --address /run/containerd/containerd.sock version >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "containerd on $n did not answer within 20 s (log: $LAB_ROOT/logs/$n-containerd.log)"
}

lab_import_images() {
  local n=$1 f
  local imgs=("$LAB_IMAGES"/*.tar)
  [ "${LAB_CONF_IMAGES:-0}" = 0 ] || imgs+=("$CONF_IMAGES"/*.tar)
  for f in "${imgs[@]}"; do
    nodeexec "$n" ctr --address /run/containerd/containerd.sock -n k8s.io images import --no-unpack=false "$f" >/dev/null \
      || die "ctr images import $f on $n failed"
  done
}

# The kubelet's configuration, the same on every node (kubeadm keeps it in
# the kubelet-config ConfigMap and writes it to each node's config.yaml).
# What this machine needs beyond kubeadm's defaults: failCgroupV1: false
# (cgroups are v1 here; kubelet 1.35+ refuses them otherwise), cgroupDriver:
# cgroupfs (no systemd), resolvConf (the site's resolver: the lab's upstream
# on the underlay, lab_upstream_dns, and the site's search domain), failSwapOn: false, image garbage collection only
# on a full disk (the kubelet counts the host's disk: at its default 85% it
# removed the imported images, pause too, and nothing can be pulled again).
# Per node, as flags (lab_kubelet): a cgroup root each (three kubelets share
# the host's hierarchies) and the node's address.
lab_kubelet_yaml() {
  cat <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
staticPodPath: /etc/kubernetes/manifests
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
clusterDNS:
- $1
clusterDomain: cluster.local
healthzBindAddress: 127.0.0.1
resolvConf: /etc/kubernetes/lab-resolv.conf
failSwapOn: false
rotateCertificates: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
YAML
}

lab_kubelet_config() {
  local n=$1 dns=$2 dir; dir=$(nodedir "$n")
  lab_kubelet_yaml "$dns" > "$dir/root/var/lib/kubelet/config.yaml"
  printf 'nameserver %s\nsearch lab.invalid\n' "$LAB_UPSTREAM_DNS" > "$dir/root/etc/kubernetes/lab-resolv.conf"
}

# lab_kubeadm_phases: what kubeadm init records in the cluster, by kubeadm
# itself on cp1 from the lab's configuration: the kubeadm-config and
# kubelet-config ConfigMaps (upload-config), a bootstrap token, the
# cluster-info ConfigMap and the RBAC rules that let a node join
# (bootstrap-token), and the kube-proxy add-on (its ServiceAccount, RBAC,
# ConfigMap and DaemonSet, nftables mode). snapshift rebuild reads and
# rewrites them; the new-CA runbook's kubeadm join needs them. The
# KubeProxyConfiguration: conntrack.maxPerCore 0 leaves nf_conntrack_max,
# which only the host's own network namespace may set, as it is.
lab_kubeadm_phases() {
  local cfg=/etc/kubernetes/lab-kubeadm.yaml
  {
    cat <<YAML
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: $(nodeip cp1)
  bindPort: 6443
nodeRegistration:
  name: cp1
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: $K8S_VERSION
controlPlaneEndpoint: $(nodeip cp1):6443
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
imageRepository: registry.k8s.io
etcd:
  local:
    dataDir: /var/lib/etcd
networking:
  dnsDomain: cluster.local
  serviceSubnet: $SVC_CIDR
  podSubnet: $POD_CIDR
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
conntrack:
  maxPerCore: 0
---
YAML
    lab_kubelet_yaml "$DNS_IP"
  } > "$(nodedir cp1)/root$cfg"
  nodesh cp1 "kubeadm init phase upload-config all --config $cfg && kubeadm init phase bootstrap-token --config $cfg && kubeadm init phase addon kube-proxy --config $cfg"
}

# lab_mark_control_plane: kubeadm's mark-control-plane phase for every
# control-plane node, as init and join --control-plane run it: the label
# node-role.kubernetes.io/control-plane and the taint
# node-role.kubernetes.io/control-plane:NoSchedule, so workloads run on the
# workers only (the conformance suite and the runbook's order can tell). Run
# on cp1 with the lab's configuration, the node's name in it.
lab_mark_control_plane() {
  local n cfg=/etc/kubernetes/lab-kubeadm.yaml d
  d=$(nodedir cp1)/root
  for n in $CPS; do
    sed "s/^  name: cp1$/  name: $n/" "$d$cfg" > "$d/etc/kubernetes/lab-kubeadm-$n.yaml"
    nodesh cp1 "kubeadm init phase mark-control-plane --config /etc/kubernetes/lab-kubeadm-$n.yaml"
  done
}

# lab_kubelet NODE: the kubelet as kubeadm's systemd drop-in (10-kubeadm.conf)
# runs it: bootstrap and kubelet kubeconfigs, config.yaml, then
# KUBELET_KUBEADM_ARGS of kubeadm-flags.env (written by kubeadm join), then
# the lab's KUBELET_EXTRA_ARGS (/etc/default/kubelet's place): this node's
# own cgroup root and address.
lab_kubelet() {
  local n=$1 flags f kubeadm_args=()
  f=$(nodedir "$n")/root/var/lib/kubelet/kubeadm-flags.env
  if [ -f "$f" ]; then
    flags=$(. "$f"; echo "${KUBELET_KUBEADM_ARGS:-}")
    read -r -a kubeadm_args <<< "$flags"
  fi
  lab_start "$n" kubelet "$K8S_BIN/kubelet" --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \
    --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml "${kubeadm_args[@]}" \
    --cgroup-root="/$LAB_NODE_PREFIX$n" --node-ip="$(nodeip "$n")" --v=2
}

# kc NODE ARGS...: kubectl with the admin kubeconfig, in the node.
kc() {
  local n=$1; shift
  nodeexec "$n" "$K8S_BIN/kubectl" --kubeconfig=/etc/kubernetes/admin.conf --request-timeout=10s "$@"
}

# wait_for WHAT SECONDS CMD...: CMD until it succeeds, else FAIL naming WHAT.
wait_for() {
  local what=$1 secs=$2 i; shift 2
  for i in $(seq "$secs"); do
    "$@" >/dev/null 2>&1 && { log "$what (${i}s)"; return 0; }
    sleep 1
  done
  die "$what: not within ${secs}s"
}

node_pod_cidr() { [ -n "$(kc cp1 get node "$1" -o jsonpath='{.spec.podCIDR}')" ]; }

node_not_ready() {
  [ "$(kc cp1 get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" != True ]
}

# is_down NODE: NODE is off through the window (LAB_DOWN, the nodes of
# fault worker-down). up_nodes: the cell's nodes but those.
is_down() { case " ${LAB_DOWN:-} " in *" $1 "*) return 0 ;; esac; return 1; }
up_nodes() {
  local n
  for n in $CPS $WORKERS; do
    if ! is_down "$n"; then echo "$n"; fi
  done
}

# all_pods_ready: every pod Ready, but those bound to a node that is off
# (LAB_DOWN).
all_pods_ready() {
  local out
  out=$(kc cp1 get pods -A -o jsonpath='{range .items[*]}{.spec.nodeName} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}') || return 1
  out=$(awk -v down=" ${LAB_DOWN:-} " 'index(down, " " $1 " ") == 0 {print $2}' <<< "$out")
  [ -n "$out" ] && ! grep -vqx True <<< "$out"
}

# ctl_pods_ready NS KIND/NAME: as many pods as the controller wants (a
# Deployment's or StatefulSet's replicas, a DaemonSet's one per node) exist,
# match its selector and are Ready. Unlike rollout status, which reads the
# controller's status, this holds only once the pods are there: right after a
# restore that status is the snapshot's, and after pods are deleted it still
# counts them until the controller notices.
ctl_pods_ready() {
  local ns=$1 ctl=$2 spec nodes
  spec=$(kc cp1 -n "$ns" get "$ctl" -o json) || return 1
  nodes=$(kc cp1 get nodes -o name | wc -l)
  kc cp1 -n "$ns" get pods -o json | python3 -c '
import json, sys
ctl, nodes, down = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split()
# A node that is off (LAB_DOWN) has no pod to count: a DaemonSet wants one
# on each other node, the pods bound to it are left out.
want = nodes - len(down) if ctl["kind"] == "DaemonSet" else ctl["spec"].get("replicas", 1)
sel = ctl["spec"]["selector"]["matchLabels"]
pods = [p for p in json.load(sys.stdin)["items"]
        if all(p["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())
        and p["spec"].get("nodeName") not in down]
ready = [p for p in pods if "deletionTimestamp" not in p["metadata"] and any(
    c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]
print(f"{len(ready)}/{want} Ready, {len(pods)} pods")
sys.exit(0 if len(ready) == want == len(pods) else 1)' "$spec" "$nodes" "${LAB_DOWN:-}"
}

node_ready() {
  [ "$(kc cp1 get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# lab_client_kubeconfig NODE USER FILE [GROUP]: a kubeconfig for USER signed by
# the cluster CA (snapshift certs --kubeconfig-user), into the node's FILE.
lab_client_kubeconfig() {
  local n=$1 user=$2 file=$3 group=${4:-}
  "$snap" certs --quiet --cert-dir "$(nodedir cp1)/root/etc/kubernetes/pki" --control-plane-endpoint 10.0.0.11:6443 \
    --kubeconfig-user "$user" ${group:+--kubeconfig-group "$group"} --kubeconfig-out "$(nodedir "$n")/root$file"
}

# lab_flannel_manifest: flannel's own kube-flannel.yml, from the flannel
# module at FLANNEL_VERSION (its Namespace, RBAC, kube-flannel-cfg ConfigMap
# with 10.244.0.0/16, the lab's pod range, and the DaemonSet), with one
# change: the CNI config's cniVersion 1.0.0 becomes 0.3.1, since the flannel
# plugin the lab builds (containernetworking/plugins v0.9.1) speaks CNI up to
# 0.4.0; flannel-io/cni-plugin, which speaks 1.0.0, is not on the module proxy.
lab_flannel_manifest() {
  local dir
  dir=$(cd "$repo" && go mod download -json "github.com/flannel-io/flannel@$FLANNEL_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  [ -f "$dir/Documentation/kube-flannel.yml" ] || die "no Documentation/kube-flannel.yml in the flannel module $FLANNEL_VERSION"
  grep -q "\"Network\": \"$POD_CIDR\"" "$dir/Documentation/kube-flannel.yml" || die "kube-flannel.yml's Network is not the lab's pod range $POD_CIDR"
  grep -q '"cniVersion": "1.0.0"' "$dir/Documentation/kube-flannel.yml" || die "kube-flannel.yml's cniVersion is not 1.0.0: check the lab's change to it"
  sed 's/"cniVersion": "1.0.0"/"cniVersion": "0.3.1"/' "$dir/Documentation/kube-flannel.yml" |
    nodeexec cp1 "$K8S_BIN/kubectl" --kubeconfig=/etc/kubernetes/admin.conf apply -f -
}

# lab_apply FILE: kubectl apply with the lab's placeholders filled in.
lab_apply() {
  sed -e "s#@POD_CIDR@#$POD_CIDR#g" -e "s#@DNS_IP@#$DNS_IP#g" -e "s#@COREDNS_IMAGE@#$COREDNS_IMAGE#g" \
    -e "s#@WEB_IMAGE@#$WEB_IMAGE#g" -e "s#@SVC_CIDR@#$SVC_CIDR#g" -e "s#@K8S_VERSION@#$K8S_VERSION#g" -e "s#@PROBE_IMAGE@#$PROBE_IMAGE#g" \
    -e "s#@PROBES_DIR@#$LAB_ROOT/logs/probes#g" -e "s#@NODEPORTS@#$(for n in $CPS $WORKERS; do printf '%s:30080,' "$(nodeip "$n")"; done)#g" "$1" > "$LAB_ROOT/apply.yaml"
  nodeexec cp1 "$K8S_BIN/kubectl" --kubeconfig=/etc/kubernetes/admin.conf apply -f - < "$LAB_ROOT/apply.yaml"
}

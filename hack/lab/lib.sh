# The lab's plumbing (sourced by hack/lab/lab.sh and clean.sh): namespaces,
# per-node mounts, daemons started and stopped by PID, and the cleanup that
# removes all of it. Everything lives under $LAB_ROOT; nothing outside the
# lab's own network namespaces gets an address or a route.
LAB_ROOT=${LAB_ROOT:-/var/lib/snapshift-lab}
LAB_NETNS=snapshift-lab        # the underlay: bridge br0, 10.0.0.1/24, no other link
LAB_NODE_PREFIX=slab-          # each node's network namespace and cgroup root
# The host paths each node gets its own copy of (bind mounts in its mount namespace).
LAB_NODE_DIRS="backup root/snapshift-bundle usr/local/bin var/lib/snapshift etc/kubernetes etc/containerd var/lib/kubelet var/lib/etcd var/lib/containerd var/lib/cni etc/cni/net.d var/log/pods var/log/containers opt/cni/bin run/flannel"

log() { echo "[lab $(date +%H:%M:%S)] $*"; }
# lab_phase NAME start|end: a mark in the window's record (issue 48,
# hack/lab/tools/window reads $LAB_ROOT/logs/probes/phases.jsonl).
lab_phase() {
  mkdir -p "$LAB_ROOT/logs/probes"
  printf '{"t":%s,"phase":"%s","event":"%s"}\n' "$(date +%s%3N)" "$1" "$2" >> "$LAB_ROOT/logs/probes/phases.jsonl"
}
die() { echo "[lab] FAIL: $*" >&2; exit 1; }

LAB_ALL_NODES="cp1 w1 w2 cp2 cp3"   # cp2 and cp3: the three-control-plane variant (LAB_HA=1)
nodeip() { # node -> address on the underlay
  case $1 in admin) echo 10.0.0.10 ;; cp1) echo 10.0.0.11 ;; w1) echo 10.0.0.12 ;; w2) echo 10.0.0.13 ;;
    cp2) echo 10.0.0.14 ;; cp3) echo 10.0.0.15 ;; *) die "unknown node $1" ;; esac
}
nodedir() { echo "$LAB_ROOT/nodes/$1"; }
ipnode() { # address on the underlay -> node
  local n
  for n in $LAB_ALL_NODES; do [ "$(nodeip "$n")" = "$1" ] && { echo "$n"; return; }; done
  die "no lab node has the address $1"
}

# nodeexec NODE CMD...: runs CMD in the node's network and mount namespaces
# (nsenter execs it: no extra process).
nodeexec() {
  local n=$1; shift
  nsenter --net="/run/netns/$LAB_NODE_PREFIX$n" --mount="$LAB_ROOT/ns/$n.mnt" --uts="$LAB_ROOT/ns/$n.uts" --wd=/ -- "$@"
}

# The host-wide sysctls a kubelet sets (protectKernelDefaults: false, its
# default, "modify": pkg/kubelet/cm/container_manager_linux.go
# setupKernelTunables): saved before the first kubelet, restored by lab_clean.
LAB_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

lab_underlay() {
  mkdir -p "$LAB_ROOT/ns" "$LAB_ROOT/logs" "$LAB_ROOT/pids"
  [ -f "$LAB_ROOT/sysctl.saved" ] || sysctl $LAB_SYSCTLS > "$LAB_ROOT/sysctl.saved"
  # unshare --mount=FILE needs FILE on a private mount.
  if ! mountpoint -q "$LAB_ROOT/ns"; then
    mount --bind "$LAB_ROOT/ns" "$LAB_ROOT/ns"
    mount --make-private "$LAB_ROOT/ns"
  fi
  ip netns add "$LAB_NETNS"
  ip -n "$LAB_NETNS" link set lo up
  ip -n "$LAB_NETNS" link add br0 type bridge
  ip -n "$LAB_NETNS" addr add 10.0.0.1/24 dev br0
  ip -n "$LAB_NETNS" link set br0 up
  lab_upstream_dns
}

# lab_upstream_dns: the site's resolver the nodes' resolv.conf names (the
# kubelet's resolvConf, so CoreDNS's forward and dnsPolicy: Default pods use
# it), on the underlay at 10.0.0.1:53: CoreDNS authoritative for a root zone
# that holds nothing, so every name outside the cluster, the search domain
# lab.invalid's too, gets NXDOMAIN at once, as a real upstream answers for a
# name that does not exist (with no upstream, CoreDNS answered SERVFAIL and
# dig +search stopped there). Nothing leaves the lab.
LAB_UPSTREAM_DNS=10.0.0.1
lab_upstream_dns() {
  local d=$LAB_ROOT/upstream-dns
  mkdir -p "$d"
  printf '$ORIGIN .\n@ 3600 IN SOA ns.lab.invalid. hostmaster.lab.invalid. 1 7200 3600 1209600 60\n@ 3600 IN NS ns.lab.invalid.\n' > "$d/root.zone"
  printf '. {\n    file %s/root.zone .\n    errors\n}\n' "$d" > "$d/Corefile"
  ip netns exec "$LAB_NETNS" "$COREDNS_BIN" -conf "$d/Corefile" -dns.port 53 < /dev/null >> "$LAB_ROOT/logs/underlay-dns.log" 2>&1 &
  echo $! > "$LAB_ROOT/pids/underlay-dns"
}

# lab_admin: the operator's machine, the one that holds the bundle: a network
# namespace slab-admin (10.0.0.10) on the underlay, the host's mount namespace
# (it reads and writes the bundle under $LAB_ROOT/admin). Its PATH has
# snapshift, kubectl and the ssh/scp of hack/lab/bin-admin, which reach a
# node's namespaces instead of a network login.
lab_admin() {
  ip netns add "${LAB_NODE_PREFIX}admin"
  ip link add v-admin netns "$LAB_NETNS" type veth peer name eth0 netns "${LAB_NODE_PREFIX}admin"
  ip -n "$LAB_NETNS" link set v-admin master br0 up
  ip -n "${LAB_NODE_PREFIX}admin" link set lo up
  ip -n "${LAB_NODE_PREFIX}admin" addr add "$(nodeip admin)/24" dev eth0
  ip -n "${LAB_NODE_PREFIX}admin" link set eth0 up
  mkdir -p "$LAB_ROOT/admin" "$LAB_ROOT/bin/node" "$LAB_ROOT/bin/admin"
  local b=$LAB_ROOT/bin
  ln -sf "$LAB_BIN/crictl-$CRICTL_VERSION" "$b/node/crictl"
  ln -sf "$LAB_BIN/etcdctl-$ETCDCTL_VERSION" "$b/node/etcdctl"
  ln -sf "$K8S_BIN/kubectl" "$b/node/kubectl"
  ln -sf "$K8S_BIN/kubeadm" "$b/node/kubeadm"
  ln -sf "$K8S_BIN/kubelet" "$b/node/kubelet"   # kubeadm's preflight runs kubelet --version
  ln -sf "$repo/hack/lab/systemctl" "$b/node/systemctl"
  ln -sf "$repo/hack/lab/systemd-run" "$b/node/systemd-run"   # node apply --rollback-after's timer
  printf 'runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n' > "$b/node/crictl.yaml"
  ln -sf "$K8S_BIN/kubectl" "$b/admin/kubectl"
  ln -sf "$repo/bin/snapshift" "$b/admin/snapshift"
  ln -sf "$repo/hack/lab/bin-admin/ssh" "$b/admin/ssh"
  ln -sf "$repo/hack/lab/bin-admin/scp" "$b/admin/scp"
}

# adminsh SCRIPT: bash -e SCRIPT on the operator's machine (nsenter, not ip
# netns exec: that one unshares a mount namespace, from which the nodes' own
# cannot be entered).
adminsh() {
  nsenter --net="/run/netns/${LAB_NODE_PREFIX}admin" -- env PATH="$LAB_ROOT/bin/admin:$PATH" LAB_ROOT="$LAB_ROOT" \
    bash -euo pipefail -c "$1"
}

# nodesh NODE SCRIPT: bash -e SCRIPT as root on NODE, as an operator's shell
# there would run it: its own /usr/local/bin (where the runbook copies
# snapshift) first, the node's tools (crictl, etcdctl, kubectl, kubeadm) and
# the lab's systemctl, crictl pointed at containerd.
nodesh() {
  local n=$1
  nodeexec "$n" env PATH="/usr/local/bin:$LAB_ROOT/bin/node:$PATH" LAB_NODE="$n" LAB_ROOT="$LAB_ROOT" \
    CRI_CONFIG_FILE="$LAB_ROOT/bin/node/crictl.yaml" \
    bash -euo pipefail -c "$2"
}

# lab_node NODE: a network namespace joined to the underlay, and a mount
# namespace (kept by a bind of its nsfs file) with its own /sys (this netns'
# view, the host's cgroup hierarchies moved back under it), /run, and the
# directories of LAB_NODE_DIRS; a cgroup root slab-NODE in every hierarchy.
lab_node() {
  local n=$1 ip d c
  ip=$(nodeip "$n")
  local dir; dir=$(nodedir "$n")
  mkdir -p "$dir/root" "$dir/cg"
  ip netns add "$LAB_NODE_PREFIX$n"
  ip link add "v-$n" netns "$LAB_NETNS" type veth peer name eth0 netns "$LAB_NODE_PREFIX$n"
  ip -n "$LAB_NETNS" link set "v-$n" master br0 up
  ip -n "$LAB_NODE_PREFIX$n" link set lo up
  ip -n "$LAB_NODE_PREFIX$n" addr add "$ip/24" dev eth0
  ip -n "$LAB_NODE_PREFIX$n" link set eth0 up
  # The only way out of a node is the underlay, a bridge with no other link.
  ip -n "$LAB_NODE_PREFIX$n" route add default via 10.0.0.1 dev eth0
  # A Kubernetes node's prerequisite (kubeadm's preflight checks it); a new
  # network namespace starts with 0.
  ip netns exec "$LAB_NODE_PREFIX$n" sysctl -qw net.ipv4.ip_forward=1
  for d in $LAB_NODE_DIRS; do
    mkdir -p "$dir/root/$d"
    # Record every directory made on the host (parents too), for lab_clean.
    local p=""
    for c in ${d//\// }; do
      p="$p/$c"
      if [ ! -e "$p" ]; then mkdir "$p" && echo "$p" >> "$LAB_ROOT/created-dirs"; fi
    done
  done
  touch "$LAB_ROOT/ns/$n.mnt" "$LAB_ROOT/ns/$n.uts"
  nsenter --net="/run/netns/$LAB_NODE_PREFIX$n" -- unshare --mount="$LAB_ROOT/ns/$n.mnt" --uts="$LAB_ROOT/ns/$n.uts" --propagation private \
    bash -euc '
      dir=$1; shift
      hostname "$(basename "$dir")"  # each node its own host name, as kubeadm join names the Node
      mount --rbind /sys/fs/cgroup "$dir/cg"
      mount -t sysfs sysfs /sys
      mount --move "$dir/cg" /sys/fs/cgroup
      mount -t tmpfs -o mode=0755 tmpfs /run
      mkdir -p /run/lock
      # Names resolve inside the lab only: the nodes by /etc/hosts, and no
      # resolver (a lookup of anything else fails at once, not after a
      # timeout towards the host'"'"'s resolver).
      printf "127.0.0.1 localhost\n10.0.0.11 cp1\n10.0.0.12 w1\n10.0.0.13 w2\n10.0.0.14 cp2\n10.0.0.15 cp3\n" > "$dir/hosts"
      printf "nameserver 127.0.0.1\n" > "$dir/resolv.conf"
      mount --bind "$dir/hosts" /etc/hosts
      mount --bind "$dir/resolv.conf" /etc/resolv.conf
      for d in "$@"; do mkdir -p "/$d"; mount --bind "$dir/root/$d" "/$d"; done
    ' _ "$dir" $LAB_NODE_DIRS
  local c
  for c in /sys/fs/cgroup/*/; do
    [ -d "$c" ] || continue
    mkdir -p "$c$LAB_NODE_PREFIX$n"
    if [ -f "${c}cpuset.cpus" ]; then
      cat "${c}cpuset.cpus" > "$c$LAB_NODE_PREFIX$n/cpuset.cpus"
      cat "${c}cpuset.mems" > "$c$LAB_NODE_PREFIX$n/cpuset.mems"
    fi
  done
}

# lab_start NODE NAME CMD...: starts a daemon in the node, logs to
# $LAB_ROOT/logs/NODE-NAME.log, its PID in $LAB_ROOT/pids/NODE-NAME.
# Inside the node already (LAB_IN_NODE=1: the node's systemctl, run by
# snapshift node apply) it starts CMD directly.
lab_start() {
  local n=$1 name=$2; shift 2
  if [ "${LAB_IN_NODE:-}" = 1 ]; then
    # In a session of its own, as systemd starts a unit: a daemon started
    # from an SSH login (the Ansible-driven window) must outlive it, and
    # Go programs die of the SIGHUP a closing session sends (the lab saw a
    # worker's kubelet die so, at once, when the login ended first). SIGHUP
    # is ignored from the fork on, setsid execs it ($! stays the daemon: a
    # background job is no group leader), and the start returns only once
    # it leads its own session.
    ( trap '' HUP; exec setsid "$@" ) < /dev/null >> "$LAB_ROOT/logs/$n-$name.log" 2>&1 &
    local pid=$! i
    for i in $(seq 100); do
      [ "$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.02
    done
    echo "$pid" > "$LAB_ROOT/pids/$n-$name"
    return
  else
    # nsenter, not the nodeexec function: $! is then the daemon itself
    # (nsenter execs it), not a subshell.
    nsenter --net="/run/netns/$LAB_NODE_PREFIX$n" --mount="$LAB_ROOT/ns/$n.mnt" --uts="$LAB_ROOT/ns/$n.uts" --wd=/ -- "$@" \
      < /dev/null >> "$LAB_ROOT/logs/$n-$name.log" 2>&1 &
  fi
  echo $! > "$LAB_ROOT/pids/$n-$name"
}

# lab_stop NODE NAME: SIGTERM the daemon by its PID, SIGKILL after 15 s.
lab_stop() {
  local f="$LAB_ROOT/pids/$1-$2" pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# The PIDs of the processes that belong to a node: those in its mount
# namespace (containerd, kubelet, shims...) and those in its cgroup root
# (the containers, which have mount namespaces of their own).
lab_node_pids() {
  local n=$1 ino p
  ino=$(stat -L -c %i "$LAB_ROOT/ns/$n.mnt" 2>/dev/null) || ino=
  if [ -n "$ino" ] && [ "$ino" != "$(stat -L -c %i /proc/self/ns/mnt)" ]; then
    for p in /proc/[0-9]*; do
      [ "$(stat -L -c %i "$p/ns/mnt" 2>/dev/null)" = "$ino" ] && echo "${p#/proc/}"
    done
  fi
  cat /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n"/cgroup.procs /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n"/*/cgroup.procs \
    /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n"/*/*/cgroup.procs /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n"/*/*/*/cgroup.procs \
    /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n"/*/*/*/*/cgroup.procs 2>/dev/null || true
}

lab_nodes_present() {
  local f
  for f in "$LAB_ROOT"/ns/*.mnt; do [ -e "$f" ] && basename "$f" .mnt; done
  ip netns list 2>/dev/null | awk -v p="$LAB_NODE_PREFIX" 'index($1, p) == 1 {print substr($1, length(p) + 1)}'
}

# lab_clean: stops every daemon by its recorded PID (kubelet first), then
# kills what is left of each node by PID (containers, shims), removes the
# cgroup roots, mounts, namespaces and the directories the lab created.
lab_clean() {
  local n f pid i
  for f in "$LAB_ROOT"/pids/*-kubelet; do [ -f "$f" ] && lab_stop "$(basename "$f" -kubelet)" kubelet; done
  for f in "$LAB_ROOT"/pids/*; do
    [ -f "$f" ] || continue
    n=$(basename "$f"); lab_stop "${n%%-*}" "${n#*-}"
  done
  for n in $(lab_nodes_present | sort -u); do
    for i in 1 2 3 4 5; do
      pids=$(lab_node_pids "$n" | sort -u)
      [ -z "$pids" ] && break
      kill -KILL $pids 2>/dev/null || true
      sleep 0.5
    done
    [ -n "$(lab_node_pids "$n")" ] && echo "[lab] clean: processes of $n still running: $(lab_node_pids "$n" | tr '\n' ' ')" >&2
    for i in 1 2 3 4 5; do
      find /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n" -depth -type d -exec rmdir {} + 2>/dev/null || true
      ls -d /sys/fs/cgroup/*/"$LAB_NODE_PREFIX$n" >/dev/null 2>&1 || break
      sleep 0.5
    done
    if mountpoint -q "$LAB_ROOT/ns/$n.mnt" 2>/dev/null; then umount "$LAB_ROOT/ns/$n.mnt"; fi
    if mountpoint -q "$LAB_ROOT/ns/$n.uts" 2>/dev/null; then umount "$LAB_ROOT/ns/$n.uts"; fi
    ip netns del "$LAB_NODE_PREFIX$n" 2>/dev/null || true
  done
  ip netns del "$LAB_NETNS" 2>/dev/null || true
  if mountpoint -q "$LAB_ROOT/ns" 2>/dev/null; then umount "$LAB_ROOT/ns"; fi
  if [ -f "$LAB_ROOT/sysctl.saved" ]; then
    sed 's/ //g' "$LAB_ROOT/sysctl.saved" | xargs sysctl -q -w >/dev/null || echo "[lab] clean: could not restore $(cat "$LAB_ROOT/sysctl.saved" | tr '\n' ' ')" >&2
    rm -f "$LAB_ROOT/sysctl.saved"
  fi
  if [ -f "$LAB_ROOT/created-dirs" ]; then
    sort -r -u "$LAB_ROOT/created-dirs" | while read -r d; do rmdir "$d" 2>/dev/null || true; done
    rm -f "$LAB_ROOT/created-dirs"
  fi
}

#!/usr/bin/env bash
# make lab (issue 33): a cluster of real components in network namespaces on
# this machine, offline: the nodes of a cell of hack/lab/matrix.json (one-cp:
# control-plane node cp1; three-cp: cp1, cp2, cp3)
# and workers w1, w2, each with containerd and a kubelet; the control plane
# as static pods from snapshift's own certs and manifests; kube-proxy
# (kubeadm's add-on) and flannel (its kube-flannel.yml) as DaemonSets,
# CoreDNS as a Deployment. It is migrated and rolled back by RUNBOOK.md's
# own blocks (hack/lab/migrate.sh) and checked (hack/lab/checks.sh).
# Everything it starts is stopped by PID and every namespace and mount
# removed on exit, failure or Ctrl-C (LAB_KEEP=1 keeps the cluster running;
# make lab-clean removes it). Logs: out/lab-<cell>/logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
. hack/lab/versions.sh
. hack/lab/lib.sh
. hack/lab/node.sh
. hack/lab/runbook.sh
. hack/lab/migrate.sh
. hack/lab/ansible.sh
. hack/lab/faults.sh
[ "$(id -u)" = 0 ] || die "the lab needs root (network and mount namespaces, cgroups)"
for c in containerd runc ctr ip nsenter unshare nft iptables busybox; do
  command -v "$c" >/dev/null || die "$c is missing: apt-get install -y containerd runc containernetworking-plugins iptables nftables busybox-static"
done
if [ -e "$LAB_ROOT/ns" ] || ip netns list | grep -q "^$LAB_NETNS"; then
  die "a lab is already there ($LAB_ROOT): make lab-clean"
fi
status=1
finish() {
  trap - EXIT INT TERM
  if { [ "${LAB_KEEP:-}" = 1 ] && [ $status = 0 ]; } || [ "${LAB_KEEP:-}" = always ]; then
    log "LAB_KEEP=1: the lab keeps running; make lab-clean removes it"; return
  fi
  local logs=${logs:-$repo/out/lab-${LAB_CELL:-one-cp}/logs}
  rm -rf "$logs"; mkdir -p "$logs"
  cp -a "$LAB_ROOT"/logs/. "$logs/" 2>/dev/null || true
  for n in $(lab_nodes_present | sort -u); do
    cp -a "$(nodedir "$n")/root/var/log/pods" "$logs/$n-pods" 2>/dev/null || true
  done
  log "stopping the lab"
  lab_clean
  rm -rf "$LAB_ROOT"
  if [ $status = 0 ]; then log "PASS"; else log "FAIL (component logs in ${logs#$repo/})"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

POD_CIDR=10.244.0.0/16
SVC_CIDR=192.168.0.0/16
DNS_IP=192.168.0.10
# The cell of the lab's matrix (hack/lab/matrix.json) this run brings up:
# LAB_CELL names it (LAB_HA=1: three-cp, else one-cp); its control-plane
# nodes, workers and scenarios (LAB_SCENARIOS: a subset, by name).
LAB_CELL=${LAB_CELL:-$([ "${LAB_HA:-0}" = 1 ] && echo three-cp || echo one-cp)}
eval "$(python3 hack/lab/matrix.py shell "$LAB_CELL")" || die "no cell $LAB_CELL in hack/lab/matrix.json"
WORKERS=${LAB_WORKERS:-$CELL_WORKERS}
CPS=$CELL_CPS
SCENARIOS=${LAB_SCENARIOS:-$CELL_SCENARIOS}
logs=$repo/out/lab-$LAB_CELL/logs
[ "$CELL_CNI" = flannel ] && [ "$CELL_INSTALLER" = kubeadm ] && [ "$CELL_K8S" = "$K8S_VERSION" ] ||
  die "cell $LAB_CELL wants $CELL_CNI, $CELL_INSTALLER, Kubernetes $CELL_K8S: the lab brings up flannel on kubeadm's layout at $K8S_VERSION only"
ansible_needed=0
for sc in $SCENARIOS; do
  eval "$(python3 hack/lab/matrix.py scenario "$LAB_CELL" "$sc")" || die "cell $LAB_CELL has no scenario $sc"
  [ "$SC_DRIVER" = ansible ] && ansible_needed=1
done
# Kubernetes' conformance suite (issue 49, hack/lab/conformance.sh): after
# the states the matrix names (a scenario's conformance list); LAB_CONFORMANCE
# =network or all runs it on the baseline and after every migration and
# rollback ([sig-network]'s tests, or all of them); =0 never.
. hack/lab/conformance.sh
LAB_CONFORMANCE=${LAB_CONFORMANCE:-}
case $LAB_CONFORMANCE in
  ''|0) LAB_CONFORMANCE_SELECTION=network ;;
  network|all) LAB_CONFORMANCE_SELECTION=$LAB_CONFORMANCE ;;
  *) die "LAB_CONFORMANCE=$LAB_CONFORMANCE: network, all or 0" ;;
esac
conf_states() { # SCENARIO: the states after which it runs the suite
  case $LAB_CONFORMANCE in
    0) ;;
    network|all) echo migrated rolled-back ;;
    *) eval "$(python3 hack/lab/matrix.py scenario "$LAB_CELL" "$1")"; echo "$SC_CONFORMANCE" ;;
  esac
}
LAB_CONF_IMAGES=0
case $LAB_CONFORMANCE in network|all) LAB_CONF_IMAGES=1 ;; esac
for sc in $SCENARIOS; do [ -z "$(conf_states "$sc")" ] || LAB_CONF_IMAGES=1; done
LAB_CONFORMANCE_BUILD=$LAB_CONF_IMAGES bash hack/lab/build.sh
make -s build   # bin/snapshift with the version stamp, as make build makes it
snap=$repo/bin/snapshift
log "cell $LAB_CELL: control plane $CPS, workers $WORKERS, scenarios $SCENARIOS$([ $LAB_CONF_IMAGES = 0 ] || echo ", conformance $LAB_CONFORMANCE_SELECTION")"

# The check table: check NAME CMD... runs CMD, records PASS or FAIL with
# CMD's last output line.
checks=()
check() {
  local name=$1 out rc=0; shift
  out=$("$@" 2>&1) || rc=$?
  if [ $rc = 0 ]; then checks+=("PASS  $name"); log "PASS $name"
  else checks+=("FAIL  $name: $(echo "$out" | tail -1)"); log "FAIL $name: $(echo "$out" | tail -3 | tr '\n' ' ')"; lab_diag "$name"; fi
}
# lab_diag NAME: what a failed check leaves to read, printed (CI shows only
# the run's output) and kept in the logs: every pod with its node, IP, age and
# owner, and the newest events.
lab_diag() {
  local f=$LAB_ROOT/logs/check-failures.txt
  {
    echo "==== $(date -u +%T) FAIL $1"
    kc cp1 get pods -A -o custom-columns='POD:.metadata.namespace,NAME:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase,IP:.status.podIP,CREATED:.metadata.creationTimestamp,DELETING:.metadata.deletionTimestamp,OWNER:.metadata.ownerReferences[0].name' 2>&1 || true
    kc cp1 get events -A --sort-by=.lastTimestamp -o custom-columns='LAST:.lastTimestamp,NS:.metadata.namespace,OBJECT:.involvedObject.name,REASON:.reason,FROM:.source.component,MESSAGE:.message' 2>&1 | tail -25 || true
  } | tee -a "$f" | sed 's/^/    /' || true
}
table() {
  echo "---------------- lab checks ----------------"
  printf '%s\n' "${checks[@]}"
  echo "--------------------------------------------"
  ! printf '%s\n' "${checks[@]}" | grep -q '^FAIL'
}

t0=$(date +%s)
log "underlay $LAB_NETNS and the control-plane node(s) $CPS"
lab_underlay
lab_admin
[ $ansible_needed = 0 ] || lab_ssh_keys
initial_cluster=$(for n in $CPS; do printf '%s=https://%s:2380,' "$n" "$(nodeip "$n")"; done); initial_cluster=${initial_cluster%,}
extra_sans=$(for n in $CPS; do [ "$n" = cp1 ] || printf '%s,' "$(nodeip "$n")"; done); extra_sans=${extra_sans%,}
cp1=$(nodedir cp1)/root
for n in $CPS; do
  lab_node "$n"
  [ $ansible_needed = 0 ] || lab_sshd "$n"
  lab_containerd "$n"
  t=$(date +%s); lab_import_images "$n"; log "images imported into $n in $(( $(date +%s) - t ))s"
  d=$(nodedir "$n")/root ip=$(nodeip "$n")
  if [ "$n" = cp1 ]; then
    # The cluster's PKI and kubeconfigs; the apiserver certificate names
    # every control-plane node's address (they share it below).
    "$snap" certs --all --quiet --cert-dir "$cp1/etc/kubernetes/pki" --control-plane-endpoint 10.0.0.11:6443 \
      --apiserver-advertise-address 10.0.0.11 --node-name cp1 --service-cidr "$SVC_CIDR" \
      ${extra_sans:+--apiserver-cert-extra-sans "$extra_sans"} --etcd-member cp1=https://10.0.0.11:2380 >/dev/null
  else
    # Another control-plane node: the cluster's CAs and shared keys (as
    # kubeadm join --control-plane copies them), its own etcd certificates.
    cp -a "$cp1/etc/kubernetes/pki" "$d/etc/kubernetes/"
    "$snap" certs --renew etcd --quiet --cert-dir "$d/etc/kubernetes/pki" --node-name "$n" \
      --etcd-member "$n=https://$ip:2380" >/dev/null
    find "$d/etc/kubernetes/pki" -name '*.bak' -delete
    for f in admin.conf super-admin.conf controller-manager.conf scheduler.conf; do cp -a "$cp1/etc/kubernetes/$f" "$d/etc/kubernetes/"; done
    lab_client_kubeconfig "$n" "system:node:$n" /etc/kubernetes/kubelet.conf system:nodes >/dev/null
  fi
  "$snap" manifests --generate --quiet --out-dir "$d/etc/kubernetes/manifests" --kubernetes-version "$K8S_VERSION" \
    --node-name "$n" --apiserver-advertise-address "$ip" --service-cidr "$SVC_CIDR" \
    --pod-network-cidr "$POD_CIDR" --etcd-member "$n=https://$ip:2380" --initial-cluster "$initial_cluster" \
    --etcd-data-dir /var/lib/etcd >/dev/null
  lab_kubelet_config "$n" "$DNS_IP"
done
# Every kubelet at once: etcd's members need their quorum.
for n in $CPS; do lab_kubelet "$n"; done
for n in $CPS; do wait_for "$n: kube-apiserver ready (static pods etcd, kube-apiserver)" 300 kc "$n" --server "https://$(nodeip "$n"):6443" get --raw /readyz; done
# As kubeadm init does with super-admin.conf: admin.conf's group
# kubeadm:cluster-admins gets cluster-admin, and the apiserver's kubelet
# client (kubectl exec, logs) system:kubelet-api-admin.
nodeexec cp1 "$K8S_BIN/kubectl" --kubeconfig=/etc/kubernetes/super-admin.conf create clusterrolebinding \
  kubeadm:cluster-admins --clusterrole=cluster-admin --group=kubeadm:cluster-admins >/dev/null
kc cp1 create clusterrolebinding kubeadm:kubelet-api-admin --clusterrole=system:kubelet-api-admin \
  --user=kube-apiserver-kubelet-client >/dev/null
lab_kubeadm_phases > "$LAB_ROOT/logs/cp1-kubeadm-phases.log" 2>&1 || die "kubeadm init phase upload-config/bootstrap-token on cp1 failed (log: ${logs#$repo/}/cp1-kubeadm-phases.log)"
lab_apply hack/lab/manifests/addons.yaml >/dev/null
lab_flannel_manifest > "$LAB_ROOT/logs/kube-flannel-apply.log" 2>&1 || die "kubectl apply of kube-flannel.yml failed (log: ${logs#$repo/}/kube-flannel-apply.log)"
# The nodes turn Ready once flannel's DaemonSet pod has installed the CNI
# plugin and config and flanneld has written /run/flannel/subnet.env.
for n in $CPS; do wait_for "$n: node Ready (kube-proxy and flannel pods)" 240 node_ready "$n"; done
lab_mark_control_plane > "$LAB_ROOT/logs/cp1-mark-control-plane.log" 2>&1 || die "kubeadm init phase mark-control-plane failed (log: ${logs#$repo/}/cp1-mark-control-plane.log)"
log "control plane up in $(( $(date +%s) - t0 ))s"

for w in $WORKERS; do
  log "worker $w"
  lab_node "$w"
  [ $ansible_needed = 0 ] || lab_sshd "$w"
  lab_containerd "$w"
  lab_import_images "$w"
  wd=$(nodedir "$w")/root
  mkdir -p "$wd/etc/kubernetes/pki" "$wd/etc/kubernetes/manifests"
  cp "$cp1/etc/kubernetes/pki/ca.crt" "$wd/etc/kubernetes/pki/ca.crt"
  lab_client_kubeconfig "$w" "system:node:$w" /etc/kubernetes/kubelet.conf system:nodes >/dev/null
  cp "$cp1/etc/kubernetes/admin.conf" "$wd/etc/kubernetes/admin.conf"
  lab_kubelet_config "$w" "$DNS_IP"
  lab_kubelet "$w"
  wait_for "$w: node registered" 120 kc cp1 get node "$w"
done
for w in $WORKERS; do wait_for "$w: node Ready" 180 node_ready "$w"; done
log "cluster of $(wc -w <<< "$CPS $WORKERS") nodes up in $(( $(date +%s) - t0 ))s"
lab_apply hack/lab/manifests/workloads.yaml >/dev/null
# The window's probes (issue 48): DaemonSet watch on every node, and
# /readyz from the operator's machine, every 0.5 s from here to the end.
lab_apply hack/lab/manifests/watch.yaml >/dev/null
mkdir -p "$LAB_ROOT/logs/probes"
nsenter --net="/run/netns/${LAB_NODE_PREFIX}admin" -- "$LAB_BIN/tools/probe" watch -dir "$LAB_ROOT/logs/probes" -node operator \
  -readyz "https://$(nodeip cp1):6443/readyz" < /dev/null >> "$LAB_ROOT/logs/operator-watch.log" 2>&1 &
echo $! > "$LAB_ROOT/pids/admin-watch"
lab_wait_workloads "old cluster"
kc cp1 get nodes -o wide
kc cp1 get pods -A -o wide

. hack/lab/checks.sh
checks_cluster old "$POD_CIDR" "$SVC_CIDR" 192.168.0.1 "$DNS_IP"
case $LAB_CONFORMANCE in network|all) conformance_run baseline ;; esac
# Each scenario: migrate (its CA, its driver), check, roll back by the same
# driver, check; the check table names the scenario.
for sc in $SCENARIOS; do
  eval "$(python3 hack/lab/matrix.py scenario "$LAB_CELL" "$sc")"
  ts=$(date +%s)
  lab_phase "scenario:$sc:migrate" start
  lab_migrate "$sc" "$SC_CA" "$SC_DRIVER"
  if [ "$FAULT_ENDS" = old ]; then
    # The fault ended the window in the old cluster (as the runbook's
    # section "When something goes wrong" says it does): the old cluster's
    # checks, and nothing to roll back.
    lab_phase checks start
    ETCD_WANT=$OLD_ETCD ETCD_NOT=$NEW_ETCD checks_cluster "$sc, $SC_FAULT: ended in the old cluster" "$POD_CIDR" "$SVC_CIDR" 192.168.0.1 "$DNS_IP" "$NEW_SVC_CIDR"
    lab_phase checks end
    lab_phase "scenario:$sc:migrate" end
    log "[$sc] fault $SC_FAULT: the old cluster back and checked in $(( $(date +%s) - ts ))s"
    continue
  fi
  if [ -n "$SC_RECOVERY" ]; then
    # A recovery keeps the ranges: the old ones' checks, on the restored
    # etcd cluster. Rolled back, the lost state would be back: none.
    lab_phase checks start
    ETCD_WANT=$NEW_ETCD ETCD_NOT=$OLD_ETCD checks_cluster "$sc, recovered" "$POD_CIDR" "$SVC_CIDR" 192.168.0.1 "$DNS_IP" "$NEW_SVC_CIDR"
    lab_phase checks end
    lab_phase "scenario:$sc:migrate" end
    log "[$sc] recovered and checked in $(( $(date +%s) - ts ))s (no rollback: it would bring back the lost control plane)"
    continue
  fi
  lab_phase checks start
  ETCD_WANT=$NEW_ETCD ETCD_NOT=$OLD_ETCD checks_cluster "$sc, migrated" "$NEW_POD_CIDR" "$NEW_SVC_CIDR" 172.24.0.1 172.24.0.10 "$SVC_CIDR"
  lab_phase checks end
  [[ " $(conf_states "$sc") " != *" migrated "* ]] || conformance_run "$sc-migrated"
  lab_phase "scenario:$sc:migrate" end
  log "[$sc] migrated and checked in $(( $(date +%s) - ts ))s"
  [ "${LAB_ROLLBACK:-1}" = 1 ] || continue
  ts=$(date +%s)
  lab_phase "scenario:$sc:rollback" start
  lab_rollback "$sc" "$SC_DRIVER"
  lab_phase checks start
  ETCD_WANT=$OLD_ETCD ETCD_NOT=$NEW_ETCD checks_cluster "$sc, rolled back" "$POD_CIDR" "$SVC_CIDR" 192.168.0.1 "$DNS_IP" "$NEW_SVC_CIDR"
  lab_phase checks end
  [[ " $(conf_states "$sc") " != *" rolled-back "* ]] || conformance_run "$sc-rolled-back"
  lab_phase "scenario:$sc:rollback" end
  log "[$sc] rolled back and checked in $(( $(date +%s) - ts ))s"
done
# The window as numbers and a picture (hack/lab/tools/window): kept in the
# logs (window/), the table printed; it never fails the lab.
"$LAB_BIN/tools/window" -dir "$LAB_ROOT/logs/probes" -out "$LAB_ROOT/logs/window" || log "window: could not measure the window (see above)"
log "scenario done in $(( $(date +%s) - t0 ))s"
table && status=0

#!/usr/bin/env bash
# make lab (issue 33): a cluster of real components in network namespaces on
# this machine, offline. So far: the control-plane node cp1 (containerd,
# kubelet, the control plane as static pods from snapshift's own certs and
# manifests) comes up Ready. Everything it starts is stopped by PID and every
# namespace and mount removed on exit, failure or Ctrl-C (LAB_KEEP=1 keeps
# the cluster running; make lab-clean removes it). Logs: out/lab/logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
. hack/lab/versions.sh
. hack/lab/lib.sh
. hack/lab/node.sh
[ "$(id -u)" = 0 ] || die "the lab needs root (network and mount namespaces, cgroups)"
for c in containerd runc ctr ip nsenter unshare nft iptables; do
  command -v "$c" >/dev/null || die "$c is missing: apt-get install -y containerd runc containernetworking-plugins iptables nftables"
done
if [ -e "$LAB_ROOT/ns" ] || ip netns list | grep -q "^$LAB_NETNS"; then
  die "a lab is already there ($LAB_ROOT): make lab-clean"
fi
bash hack/lab/build.sh
go build -o bin/snapshift ./cmd/snapshift
snap=$repo/bin/snapshift
status=1
finish() {
  trap - EXIT INT TERM
  if [ "${LAB_KEEP:-}" = 1 ] && [ $status = 0 ]; then
    log "LAB_KEEP=1: the lab keeps running; make lab-clean removes it"; return
  fi
  rm -rf "$repo/out/lab/logs"; mkdir -p "$repo/out/lab/logs"
  cp -a "$LAB_ROOT"/logs/. "$repo/out/lab/logs/" 2>/dev/null || true
  for n in $(lab_nodes_present | sort -u); do
    cp -a "$(nodedir "$n")/root/var/log/pods" "$repo/out/lab/logs/$n-pods" 2>/dev/null || true
  done
  log "stopping the lab"
  lab_clean
  rm -rf "$LAB_ROOT"
  if [ $status = 0 ]; then log "PASS"; else log "FAIL (component logs in out/lab/logs)"; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
log "underlay $LAB_NETNS and node cp1"
lab_underlay
lab_node cp1
lab_containerd cp1
t=$(date +%s); lab_import_images cp1; log "images imported into cp1 in $(( $(date +%s) - t ))s"

cp1=$(nodedir cp1)/root
"$snap" certs --all --quiet --cert-dir "$cp1/etc/kubernetes/pki" --control-plane-endpoint 10.0.0.11:6443 \
  --apiserver-advertise-address 10.0.0.11 --node-name cp1 --service-cidr 192.168.0.0/16 \
  --etcd-member cp1=https://10.0.0.11:2380
"$snap" manifests --generate --quiet --out-dir "$cp1/etc/kubernetes/manifests" --kubernetes-version "$K8S_VERSION" \
  --node-name cp1 --apiserver-advertise-address 10.0.0.11 --service-cidr 192.168.0.0/16 \
  --pod-network-cidr 10.244.0.0/16 --etcd-member cp1=https://10.0.0.11:2380 --etcd-data-dir /var/lib/etcd
lab_kubelet_config cp1 192.168.0.10
lab_kubelet cp1
wait_for "cp1: kube-apiserver answers" 300 kc cp1 get --raw /readyz
wait_for "cp1: node Ready" 180 node_ready cp1
kc cp1 get nodes -o wide
kc cp1 get pods -A -o wide
log "cluster up in $(( $(date +%s) - t0 ))s"
status=0

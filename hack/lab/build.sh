#!/usr/bin/env bash
# Builds everything the lab runs, once, cached outside the clone in
# ~/.cache/snapshift-e2e (SNAPSHIFT_E2E_CACHE): the Kubernetes components
# (hack/build-k8s.sh), etcd (hack/build-etcd.sh), CoreDNS, flannel and the
# flannel CNI plugin from the Go module proxy, the lab's own programs
# (hack/lab/tools) and the OCI image archives that `ctr images import` loads
# into each node's containerd. Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
. hack/lab/versions.sh
t0=$(date +%s)
step() { echo "[lab] $*"; }
took() { echo "[lab] $1 in $(( $(date +%s) - $2 ))s"; }

t=$(date +%s)
bash hack/build-k8s.sh "$K8S_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl kubeadm # kubeadm: the runbook's join and the lab's init phases (make lab alone on a fresh machine)
took "kubernetes $K8S_VERSION" "$t"
t=$(date +%s)
bash hack/build-etcd.sh
took etcd "$t"
etcd_bin=$(ls -d "$LAB_CACHE"/etcd-v*/etcd | sort -V | tail -1)

# gobuild NAME MODULE@VERSION PACKAGE [MAINFN]: a main package of a module
# from the proxy, built in a small module of its own, into
# $LAB_BIN/NAME-VERSION; with MAINFN, the main is the Go source that function
# prints (PACKAGE is then only named in the log).
gobuild() {
  local name=$1 mod=${2%@*} ver=${2#*@} pkg=$3 mainfn=${4:-}
  local out="$LAB_BIN/$name-$ver"
  if [ -x "$out" ]; then echo "[lab] $name $ver: cached"; return; fi
  mkdir -p "$LAB_BIN"
  local work t
  work=$(mktemp -d "$LAB_CACHE/.build-$name.XXXX")
  t=$(date +%s)
  (
    cd "$work"
    printf 'module snapshift.local/%sbuild\n\ngo 1.25\n\nrequire %s %s\n' "$name" "$mod" "$ver" > go.mod
    if [ -n "$mainfn" ]; then
      "$mainfn" > main.go
      pkg=.
    else
      printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
    fi
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1
    GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" "$pkg"
  ) || { rm -rf "$work"; return 1; }
  rm -rf "$work"
  mv "$out.tmp" "$out"
  took "$name $ver" "$t"
}
# CoreDNS with only the plugins the lab's Corefiles use (the cluster's:
# errors, health, ready, kubernetes, forward, cache, loop, reload,
# loadbalance; the lab's upstream resolver's: file), as CoreDNS documents
# for a build of one's own: a main that imports them and coremain. The
# release's main imports every plugin (cloud SDKs, etcd, gRPC...), which
# took 33 minutes cold here. The binary's name says its plugin set.
corednsmain() {
  local p
  printf 'package main\n\nimport (\n\t"github.com/coredns/coredns/coremain"\n'
  for p in $COREDNS_PLUGINS; do
    printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"
  done
  printf ')\n\nfunc main() { coremain.Run() }\n'
}
gobuild "$COREDNS_BUILD" "github.com/coredns/coredns@$COREDNS_VERSION" github.com/coredns/coredns corednsmain
# flanneld: its main.go imports every backend, and the Tencent Cloud one needs
# github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc, which the
# module proxy does not serve, and the udp one needs cgo; so it is built from
# a copy of the module's source without those two backends. The lab uses vxlan.
flanneld() {
  local out="$LAB_BIN/flanneld-$FLANNEL_VERSION" work src t
  if [ -x "$out" ]; then echo "[lab] flanneld $FLANNEL_VERSION: cached"; return; fi
  t=$(date +%s)
  src=$(go mod download -json "github.com/flannel-io/flannel@$FLANNEL_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  work=$(mktemp -d "$LAB_CACHE/.build-flanneld.XXXX")
  cp -r "$src/." "$work/" && chmod -R u+w "$work"
  (
    cd "$work"
    sed -i -e '\#pkg/backend/tencentvpc"#d' -e '\#pkg/backend/udp"#d' main.go
    rm -rf pkg/backend/tencentvpc pkg/backend/udp
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1
    GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$FLANNEL_VERSION" -o "$out.tmp" .
  ) || { rm -rf "$work"; return 1; }
  rm -rf "$work"
  mv "$out.tmp" "$out"
  took "flanneld $FLANNEL_VERSION" "$t"
}
flanneld
gobuild crictl "sigs.k8s.io/cri-tools@$CRICTL_VERSION" sigs.k8s.io/cri-tools/cmd/crictl
gobuild etcdctl "go.etcd.io/etcd/etcdctl/v3@$ETCDCTL_VERSION" go.etcd.io/etcd/etcdctl/v3
gobuild cni-flannel "github.com/containernetworking/plugins@$CNI_FLANNEL_VERSION" github.com/containernetworking/plugins/plugins/meta/flannel
# The flannel image's install-conf (kube-flannel.yml's init container
# install-cni copies the CNI config with it).
gobuild flannel-install-conf "github.com/flannel-io/flannel@$FLANNEL_VERSION" github.com/flannel-io/flannel/cmd/install_conf

t=$(date +%s)
mkdir -p "$LAB_BIN/tools"
(cd hack/lab/tools && CGO_ENABLED=0 go build -trimpath -o "$LAB_BIN/tools/" ./...)
took "lab tools" "$t"

# Images: one layer with the static binary; rebuilt when missing.
t=$(date +%s)
mkdir -p "$LAB_IMAGES"
img() { # FILE NAME mkimage-args...
  local f="$LAB_IMAGES/$1.tar" name=$2 a src stale=0; shift 2
  # Rebuilt when a file it packs is newer (a lab tool changed).
  for a in "$@"; do
    src=${a#*=}
    [[ $a == /*=/* ]] && [ "$src" -nt "$f" ] && stale=1
  done
  [ -s "$f" ] && [ $stale = 0 ] && return
  "$LAB_BIN/tools/mkimage" -o "$f" -name "$name" "$@"
}
img pause "$PAUSE_IMAGE" -file /pause="$LAB_BIN/tools/pause" -entrypoint /pause
img web "$WEB_IMAGE" -file /usr/local/bin/web="$LAB_BIN/tools/web" -entrypoint /usr/local/bin/web
img probe "$PROBE_IMAGE" -file /usr/local/bin/probe="$LAB_BIN/tools/probe" -entrypoint "/usr/local/bin/probe sleep"
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  img "$c" "registry.k8s.io/$c:$K8S_VERSION" -file "/usr/local/bin/$c=$K8S_BIN/$c"
done
# libs BIN: -file arguments for the shared libraries a dynamic BIN needs
# (hack/build-etcd.sh builds etcd with cgo, as the e2e runs it on the host).
libs() {
  ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r l; do printf -- '-file\n%s=%s\n' "$l" "$(readlink -f "$l")"; done
}
mapfile -t etcd_libs < <(libs "$etcd_bin")
img etcd "$ETCD_IMAGE" -file /usr/local/bin/etcd="$etcd_bin" "${etcd_libs[@]}"
# busybox:1.36, the image `snapshift cluster check` runs its DNS probe pod
# with (nslookup), holds Debian's busybox-static (1.35; the tag is the name
# the check asks for): a copy of it named nslookup, as busybox dispatches on
# its name.
[ -x /bin/busybox ] || { echo "[lab] /bin/busybox is missing: apt-get install -y busybox-static" >&2; exit 1; }
img busybox "$BUSYBOX_IMAGE" -file /bin/busybox=/bin/busybox -file /bin/nslookup=/bin/busybox -file /bin/sh=/bin/busybox
img coredns-lab "$COREDNS_IMAGE" -file /coredns="$COREDNS_BIN" -entrypoint /coredns
# The DaemonSets' images. kube-proxy (nftables mode) runs nft; flanneld
# (--ip-masq) runs iptables: Debian's nft and iptables (nf_tables backend,
# the multi-call xtables-nft-multi under each name it answers to, and its
# extensions), with the libraries they load.
command -v nft >/dev/null && [ -x /usr/sbin/xtables-nft-multi ] ||
  { echo "[lab] nft or xtables-nft-multi is missing: apt-get install -y nftables iptables" >&2; exit 1; }
# /etc/protocols too (Debian's netbase): without it nft prints a protocol as
# its number (6, not tcp), so a restarted kube-proxy, which reads its maps'
# elements back to find stale ones, found none of its "ip . tcp . port" keys
# and deleted every Service's element (the lab saw VIPs refuse connections
# after cluster restart restarted the DaemonSet).
[ -s /etc/protocols ] && [ -s /etc/services ] || { echo "[lab] /etc/protocols or /etc/services is missing: apt-get install -y netbase" >&2; exit 1; }
netfilter=()
mapfile -t netfilter < <(
  printf -- '-file\n/etc/protocols=/etc/protocols\n-file\n/etc/services=/etc/services\n'
  printf -- '-file\n/usr/sbin/nft=%s\n' "$(readlink -f "$(command -v nft)")"
  for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    printf -- '-file\n/usr/sbin/%s=/usr/sbin/xtables-nft-multi\n' "$t"
  done
  for x in /usr/lib/x86_64-linux-gnu/xtables/*.so; do printf -- '-file\n%s=%s\n' "$x" "$x"; done
  { libs "$(command -v nft)"; libs /usr/sbin/xtables-nft-multi; } | paste - - | sort -u | tr '\t' '\n'
)
img kube-proxy "$KUBE_PROXY_IMAGE" -file "/usr/local/bin/kube-proxy=$K8S_BIN/kube-proxy" "${netfilter[@]}"
img flannel "$FLANNEL_IMAGE" -file "/opt/bin/flanneld=$LAB_BIN/flanneld-$FLANNEL_VERSION" \
  -file "/opt/bin/install-conf=$LAB_BIN/flannel-install-conf-$FLANNEL_VERSION" "${netfilter[@]}" -entrypoint /opt/bin/flanneld
# The CNI plugin's image: the plugin and a cp (busybox) for its init container.
img flannel-cni-plugin "$FLANNEL_CNI_PLUGIN_IMAGE" -file "/flannel=$LAB_BIN/cni-flannel-$CNI_FLANNEL_VERSION" \
  -file /bin/cp=/bin/busybox -file /bin/sh=/bin/busybox
took images "$t"
ls -la "$LAB_IMAGES"
# The conformance suite (hack/lab/conformance.sh), when the run needs it.
if [ "${LAB_CONFORMANCE_BUILD:-0}" = 1 ]; then
  . hack/lab/conformance.sh
  conformance_build
fi
took "lab build" "$t0"

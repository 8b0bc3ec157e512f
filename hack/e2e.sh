#!/usr/bin/env bash
# make e2e: build (once, cached) kube-apiserver, kube-controller-manager and kubeadm for
# each version, the etcd server of go.mod and the etcd servers and etcdutls of
# the version matrix (TestEtcdVersionMatrix: the newest 3.5, 3.6 and 3.7; a
# cold build of one version takes a few minutes), then run the e2e tests inside a network namespace that has only
# loopback (when unshare and ip are available), so nothing can leave the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
versions=${SNAPSHIFT_E2E_K8S:-"v1.36.3 v1.30.14"}
lab=()
if [ "${SNAPSHIFT_E2E_LAB:-1}" = 1 ]; then
  # The lab's commands of the newest version, in the same go build as the
  # e2e's (one compile of the packages they share).
  lab=(kube-scheduler kubelet kube-proxy kubectl)
fi
for v in $versions; do
  # kubeadm: the oracle the certificates, kubeconfigs and manifests of a
  # rebuild are compared with (e2e/kubeadm_oracle_test.go).
  if [ "$v" = "${versions%% *}" ]; then
    bash hack/build-k8s.sh "$v" kube-apiserver kube-controller-manager kubeadm "${lab[@]}"
  else
    bash hack/build-k8s.sh "$v" kube-apiserver kube-controller-manager kubeadm
  fi
done
bash hack/build-kubeadm-check.sh "${versions%% *}"
bash hack/build-etcd.sh
etcds=${SNAPSHIFT_E2E_ETCD:-"v3.5.35 v3.6.16 v3.7.3"}
for v in $etcds; do
  bash hack/build-etcd.sh "$v"
done
export SNAPSHIFT_E2E_ETCD="$etcds"
mkdir -p bin
go test -tags e2e -c -o bin/e2e.test ./e2e
args=(-test.v -test.count=1 -test.timeout=40m)
export SNAPSHIFT_E2E_K8S="$versions"
if command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 && unshare --net true 2>/dev/null; then
  echo "[e2e] running in a network namespace with only loopback"
  unshare --net bash -c 'ip link set lo up && exec "$@"' _ bin/e2e.test "${args[@]}"
else
  echo "[e2e] no network namespace available (needs root, unshare, ip): servers bind 127.0.0.1 only"
  bin/e2e.test "${args[@]}"
fi
# The lab (hack/lab): a cluster of real components in network namespaces of
# its own, migrated by runbook.json's blocks and by the bundle's playbooks and
# rolled back, old CA and new CA, one and three control-plane nodes.
# SNAPSHIFT_E2E_LAB=0 leaves it out (a machine without root or its packages).
# The cells of the lab's matrix that CI runs (hack/lab/matrix.json, "ci":
# true): between them every scenario, both CAs by both drivers; the
# three-member cell runs both CAs (issue 45: with the old CA the old
# members accept the restored ones' certificates; only the cluster token
# and the two-phase apply keep them apart).
if [ "${SNAPSHIFT_E2E_LAB:-1}" = 1 ]; then
  for cell in $(python3 hack/lab/matrix.py ci); do
    LAB_CELL=$cell bash hack/lab/lab.sh
  done
fi

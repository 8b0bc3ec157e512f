// Package e2e proves snapshift against the real control plane: a real etcd
// (embedded, on 127.0.0.1), and kube-apiserver and kube-controller-manager
// built from the k8s.io/kubernetes module (hack/build-k8s.sh, cached outside
// the clone). A source cluster is made through the API on the old ranges,
// snapshotted, migrated with snapshift, restored, and the new control plane
// is judged through the API and its logs. kubeadm, built the same way, is
// the oracle of rebuild's certificates, kubeconfigs and manifests
// (kubeadm_oracle_test.go: its phases run on the same configuration and
// every field compared, its own check of existing files run on every
// node's part of the bundle).
//
// The tests carry the build tag e2e: `make e2e` runs them (inside a network
// namespace with only loopback when unshare is available).
package e2e

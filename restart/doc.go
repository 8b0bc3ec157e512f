// Package restart is the cluster-wide half of the downtime window as data:
// the staged restart that follows `snapshift node apply`, computed by a pure
// function (Plan) from what the bundle knows about the cluster (Input: the
// old and new ranges, the CNI and its controllers, the cluster DNS Service
// and its bridge, NodeLocal DNSCache, the admission webhooks that fail
// closed and their backends, every other workload) to an ordered list of
// Stages, each a list of typed Actions.
//
// The same list is rendered as RUNBOOK.md's restart section (package
// rebuild, through Commands) and executed by `snapshift cluster restart`
// (package clusterops): one source. The package imports nothing of the
// module but the leaf cni (the CNIs' restart roles) and nothing of
// Kubernetes, so the bundle's format can carry Input as it is.
//
// The order (Plan): the CNI in its documented order (cilium-operator before
// the cilium agents; calico-node before calico-kube-controllers; flannel,
// canal, weave), kube-proxy, the cluster DNS (and, with the DNS bridge, the
// handover that leaves the DNS Service at the kubelets' clusterDNS address),
// NodeLocal DNSCache, the backends of the webhooks that fail closed, then
// every other controller and the pods no controller restarts (bare pods,
// Jobs' pods, pods whose controller the snapshot lacks) still on old
// addresses, and last the webhooks the rebuild set to Ignore set back to
// Fail.
package restart

// Package bundle is the contract between the machine that rebuilds and the
// node that applies: the layout of a rebuild bundle and the part of its
// report.json that `snapshift node apply|rollback` (package nodeops), and
// any later command that acts on a bundle, read. It is versioned like the
// rebuild file (apiVersion snapshift.io/v1alpha1, kind BundleReport) and
// holds only plain types, so that the node-side code depends on this
// package and not on the engine that wrote the bundle (docs/DESIGN.md
// decision 31). The cluster-restart input (Operation.Cluster) is package
// restart's Input: restart is a leaf that imports nothing of the module.
//
// The layout, relative to the bundle directory:
//
//	report.json                the Report (plus the engine's own report, which readers ignore)
//	RUNBOOK.md                 the operation, step by step, for this cluster
//	etcd/<member>/             one restored etcd member data dir per member
//	kubernetes/<node>/         what goes to that node's /etc/kubernetes (pki/, kubeconfigs, manifests/)
//	kubernetes/<node>/host/... files that go elsewhere on the node, at the path below host/
//
// Writers: package rebuild. Readers: package nodeops, and the CLI's
// `cluster restart|check` (package clusterops through restart.Input).
package bundle

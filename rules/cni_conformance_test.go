package rules_test

import (
	"path/filepath"
	"testing"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/corpus"
	"github.com/snapshift/snapshift/rules"
)

// conformanceInputs are the golden inputs the conformance suite runs a
// rule on instead of the sample, for rules whose objects the sample does
// not hold (it runs flannel: no Cilium, no Weave).
var conformanceInputs = map[string]string{
	rules.NameCilium: "cilium/cluster-pool",
	rules.NameCNI:    "cni/weave",
	// k3s and RKE2: the sample is a kubeadm cluster.
	rules.NameHelmChartValues: "helm-chart-values/rke2-injected",
	rules.NameK3sApplied:      "k3s-applied/coredns",
	rules.NameK3sNodeArgs:     "k3s-node-args/explicit-flags",
	// The sample has no admission webhooks.
	rules.NameWebhooks: "webhooks/fail-closed",
}

// conformanceInput returns the snapshot the conformance suite runs rule
// name on, and its state: a golden input built on a real etcd, or the sample.
func conformanceInput(t *testing.T, name, sample string, sampleState *liveState) (string, *liveState) {
	dir, ok := conformanceInputs[name]
	if !ok {
		return sample, sampleState
	}
	c := codec.New()
	kvs := corpus.KVs(t, c, corpus.Read(t, filepath.Join(goldenDir, dir, "input.yaml")))
	in := corpus.Write(t, kvs)
	return in, readState(t, in)
}

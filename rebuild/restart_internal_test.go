package rebuild

import (
	"context"
	flagpkg "flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/corpus"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/restart"
	"github.com/snapshift/snapshift/rules"
)

var update = flagpkg.Bool("update", false, "rewrite testdata/restart/*.golden")

// restartCases are the staged restart's golden cases: the corpora the repo
// has (the golden inputs, the sample), per CNI, with and without the DNS
// bridge, with NodeLocal DNS and with webhooks that fail closed.
var restartCases = []struct {
	name    string
	sources []string // golden dirs' input.yaml or testdata/restart files; none: the sample
	opts    rules.Options
}{
	{"cilium", []string{"golden/cilium/cluster-pool/input.yaml", "restart/cilium-extra.yaml"}, podOpts()},
	{"calico", []string{"golden/calico/manifest/input.yaml"}, podOpts()},
	{"flannel-nodelocaldns", nil, both(false)},
	{"flannel-nodelocaldns-bridge", nil, both(true)},
	{"kubespray-nodelocaldns", []string{"golden/node-local-dns/kubespray/input.yaml"}, svcOpts("")},
	{"webhooks-fail-ignore", []string{"golden/webhooks/fail-closed/input.yaml", "restart/webhooks-extra.yaml"}, svcOpts(rules.WebhooksIgnore)},
	{"webhooks-fail-list", []string{"golden/webhooks/fail-closed/input.yaml", "restart/webhooks-extra.yaml"}, svcOpts(rules.WebhooksList)},
}

func podOpts() rules.Options {
	return rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}
}

func svcOpts(webhooks string) rules.Options {
	return rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, WebhooksOptions: rules.WebhooksOptions{Webhooks: webhooks}}
}

func both(bridge bool) rules.Options {
	o := svcOpts(rules.WebhooksList)
	o.PodNetworkCIDR = "10.55.0.0/16"
	if bridge {
		o.KeepServiceIPs, o.DNSBridge = []string{"kube-system/kube-dns"}, true
	}
	return o
}

// TestRestartStagesGolden plans the staged restart of each corpus as a
// rebuild does (the rules' plan in a dry run, the workloads read from the
// snapshot) and compares the stage list with testdata/restart/<case>.golden
// (-update rewrites them).
func TestRestartStagesGolden(t *testing.T) {
	for _, c := range restartCases {
		t.Run(c.name, func(t *testing.T) {
			snap := "../testdata/sample.db"
			if len(c.sources) > 0 {
				snap = corpusSnapshot(t, c.sources...)
			}
			in := plannedInput(t, snap, c.opts)
			got := restart.Text(restart.Plan(*in))
			path := filepath.Join("../testdata/restart", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("stage list differs from %s (-update rewrites it):\n%s", path, got)
			}
		})
	}
}

// plannedInput is the restart input of a snapshot under these options.
func plannedInput(t *testing.T, snap string, o rules.Options) *restart.Input {
	t.Helper()
	ctx := context.Background()
	res, err := migrate.Run(ctx, migrate.Config{Engine: migrate.Engine{Input: snap, DryRun: true}, Rules: o})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readRecorded(ctx, snap, false, nil, nil, "etcd-cluster")
	if err != nil {
		t.Fatal(err)
	}
	dns := o.DNSService
	if dns == "" {
		dns = "kube-system/kube-dns"
	}
	if strings.Contains(snap, "kubespray") {
		dns = "kube-system/coredns"
	}
	return buildInput(rec.workloads, res.Plan, dns)
}

// corpusSnapshot is the snapshot of input.yaml-style files (under
// testdata/), written through a real etcd (internal/corpus).
func corpusSnapshot(t *testing.T, files ...string) string {
	t.Helper()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(corpus.Testdata(t), f)
	}
	return corpus.Snapshot(t, paths...)
}

package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/corpus"
)

// goldenSnapshot is the snapshot of a golden case's input.yaml, written
// through a real etcd on 127.0.0.1 (internal/corpus).
func goldenSnapshot(t *testing.T, dir string) string {
	t.Helper()
	return corpus.Snapshot(t, corpus.Golden(t, dir))
}

// TestCNIDetection: inspect (text and JSON) and plan (JSON) name the CNI,
// its IPAM mode and its IPAM objects, read from a real etcd's snapshot.
func TestCNIDetection(t *testing.T) {
	for _, c := range []struct {
		dir, text, name, ipam string
		holds                 bool
	}{
		{"cilium/cluster-pool", "cilium (cluster-pool IPAM; 2 ciliumnodes.cilium.io)", "cilium", "cluster-pool", true},
		{"cilium/kubernetes-ipam", "cilium (kubernetes IPAM; 1 ciliumnodes.cilium.io): pod CIDRs come from node.spec.podCIDRs", "cilium", "kubernetes", false},
		{"cilium/multi-pool", "cilium (multi-pool IPAM; 2 ciliumnodes.cilium.io, 2 ciliumpodippools.cilium.io)", "cilium", "multi-pool", true},
		{"cni/calico-moved", "calico (calico-ipam IPAM; 1 ippools.crd.projectcalico.org, 1 ipamblocks.crd.projectcalico.org", "calico", "calico-ipam", true},
		{"cni/calico-operator-moved", "calico (calico-ipam IPAM; 1 ippools.crd.projectcalico.org, 1 ipamblocks.crd.projectcalico.org", "calico", "calico-ipam", true},
		{"cni/calico-host-local", "calico (host-local IPAM; 1 ippools.crd.projectcalico.org): pod addresses come from node.spec.podCIDR", "calico", "host-local", false},
		{"cni/weave", "weave (weave IPAM): IPALLOC_RANGE 10.244.0.0/16", "weave", "weave", false},
		{"cluster-config/canal", "canal (host-local IPAM)", "canal", "host-local", false},
	} {
		t.Run(c.dir, func(t *testing.T) {
			in := goldenSnapshot(t, c.dir)
			r := run(t, "inspect", in, "--quiet")
			if r.code != 0 || !strings.Contains(r.stdout, "\nCNI:\n  "+c.text) {
				t.Fatalf("inspect: exit %d, want the CNI line %q in:\n%s%s", r.code, c.text, r.stdout, r.stderr)
			}
			r = run(t, "inspect", in, "--quiet", "-o", "json")
			var rep struct {
				CNI []struct {
					Name, IPAM        string
					HoldsPodAddresses bool
				} `json:"cni"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.CNI) != 1 {
				t.Fatalf("inspect -o json: %v, cni %+v", err, rep.CNI)
			}
			if got := rep.CNI[0]; got.Name != c.name || got.IPAM != c.ipam || got.HoldsPodAddresses != c.holds {
				t.Errorf("inspect -o json: %+v, want %s %s holds=%v", got, c.name, c.ipam, c.holds)
			}
		})
	}
}

// TestCNIRefusal: CNI IPAM state that would be left behind is refused by
// plan and transform in one sentence with exit 4, writing nothing (Cilium's
// own pool, not the pod network kubeadm records); Calico's IPAM state moves
// with the Nodes, or, with --leave-cni-state calico, stays where it is with
// the manual steps in the notes.
func TestCNIRefusal(t *testing.T) {
	work := t.TempDir()
	cilium := goldenSnapshot(t, "cilium/refused-own-pool")
	for _, args := range [][]string{
		{"plan", cilium, "--pod-network-cidr", "10.55.0.0/16"},
		{"transform", cilium, "--out", filepath.Join(work, "out.db"), "--pod-network-cidr", "10.55.0.0/16"},
	} {
		r := run(t, append(args, "--quiet")...)
		lines := r.stderrLines()
		if r.code != ExitRefused || len(lines) != 1 || !strings.Contains(lines[0], "--leave-cni-state cilium") {
			t.Fatalf("%s: exit %d and %d stderr lines, want %d and one naming --leave-cni-state cilium:\n%s", args[0], r.code, len(lines), ExitRefused, r.stderr)
		}
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("a refused transform left %v", left)
	}
	in := goldenSnapshot(t, "cni/calico-moved")
	const oldBlock, newBlock = "/registry/crd.projectcalico.org/ipamblocks/10-244-", "/registry/crd.projectcalico.org/ipamblocks/10-55-"
	for _, c := range []struct {
		extra []string
		note  string
		block string
	}{
		{nil, "note (calico): Calico: moved to 10.55.0.0/16", newBlock},
		{[]string{"--leave-cni-state", "calico"}, "note (cni): Calico IPAM state left at the old range (--leave-cni-state calico:", oldBlock},
	} {
		out := filepath.Join(work, fmt.Sprintf("out-%d.db", len(c.extra)))
		r := run(t, append([]string{"transform", in, "--out", out, "--pod-network-cidr", "10.55.0.0/16", "--quiet"}, c.extra...)...)
		if r.code != 0 || !strings.Contains(r.stdout, c.note) {
			t.Errorf("transform %v: exit %d, want 0 and %q:\n%s%s", c.extra, r.code, c.note, r.stdout, r.stderr)
			continue
		}
		live, _ := liveState(t, out)
		if !slices.ContainsFunc(sortedKeys(live), func(k string) bool { return strings.HasPrefix(k, c.block) }) {
			t.Errorf("transform %v: no IPAMBlock under %s in %v", c.extra, c.block, sortedKeys(live))
		}
	}
	r := run(t, "plan", in, "--pod-network-cidr", "10.55.0.0/16", "--leave-cni-state", "calico", "--quiet", "-o", "json")
	var res struct {
		Plan struct {
			CNI []struct{ Name, IPAM string } `json:"cni"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Plan.CNI) != 1 || res.Plan.CNI[0].Name != "calico" || res.Plan.CNI[0].IPAM != "calico-ipam" {
		t.Errorf("plan -o json: plan.cni = %+v (%v), want calico with calico-ipam", res.Plan.CNI, err)
	}
	if r := run(t, "plan", in, "--pod-network-cidr", "10.55.0.0/16", "--leave-cni-state", "weave", "--quiet"); r.code != ExitUsage || !strings.Contains(r.stderr, "--leave-cni-state takes calico or cilium") {
		t.Errorf("--leave-cni-state weave: exit %d, want %d: %s", r.code, ExitUsage, r.stderr)
	}
}

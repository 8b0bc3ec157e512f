package restart

import (
	"strings"
	"testing"
)

// TestPlanOrder: every role in its stage, in the documented order, the
// handover right after the cluster DNS's rollout, NodeLocal DNS after it,
// the backends before the rest, the pods no controller restarts first in
// the last workload stage, and the webhooks set back last.
func TestPlanOrder(t *testing.T) {
	in := Input{
		Pod:      Ranges{Old: []string{"10.244.0.0/16"}, New: []string{"10.55.0.0/16"}},
		CNI:      []string{"cilium"},
		DNS:      &DNS{Service: "kube-system/kube-dns", Address: "192.168.0.10", Kept: true, Bridge: "kube-system/kube-dns-bridge", BridgeAddress: "172.24.0.10"},
		Webhooks: []Webhook{{Kind: "ValidatingWebhookConfiguration", Configuration: "v", Webhook: "w", Service: "app/hook", Ignored: true}},
		Workloads: []Workload{
			{Kind: "Deployment", Namespace: "app", Name: "z-last"},
			{Kind: "DaemonSet", Namespace: "kube-system", Name: "node-local-dns", Role: RoleNodeLocalDNS},
			{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Role: RoleClusterDNS},
			{Kind: "DaemonSet", Namespace: "kube-system", Name: "kube-proxy", Role: RoleKubeProxy},
			{Kind: "DaemonSet", Namespace: "kube-system", Name: "cilium", Role: "cilium"},
			{Kind: "Deployment", Namespace: "kube-system", Name: "cilium-operator", Role: RoleCiliumOp},
			{Kind: "Deployment", Namespace: "app", Name: "hook", Backs: []string{"v"}},
		},
		Pods: []Pod{
			{Namespace: "app", Name: "bare-old", IPs: []string{"10.244.3.4"}},
			{Namespace: "app", Name: "bare-new", IPs: []string{"10.55.3.4"}},
			{Namespace: "app", Name: "pending"},
		},
	}
	got := Text(Plan(in))
	order := []string{"stage 1 cni", "deploy/cilium-operator", "ds/cilium", "stage 2 kube-proxy", "stage 3 dns", "deploy/coredns", "DNS handover",
		"stage 4 node-local-dns", "stage 5 webhook-backends", "deploy/hook", "stage 6 workloads", "bare-old", "deploy/z-last", "stage 7 webhooks", "back to failurePolicy Fail"}
	last := -1
	for _, o := range order {
		i := strings.Index(got, o)
		if i <= last {
			t.Fatalf("%q missing or out of order in:\n%s", o, got)
		}
		last = i
	}
	if strings.Contains(got, "bare-new") || strings.Contains(got, "pending") {
		t.Errorf("pods on new addresses or without one are deleted:\n%s", got)
	}
}

// TestPlanCNIWithoutController: a CNI the snapshot shows through its pods
// only gets its pods named and deleted; with nothing at all, a note says
// so instead of an empty stage.
func TestPlanCNIWithoutController(t *testing.T) {
	st := Plan(Input{CNI: []string{"flannel"}, Pods: []Pod{{Namespace: "kube-flannel", Name: "kube-flannel-ds-abc", Owner: "DaemonSet/kube-flannel-ds", Role: "flannel"}}})
	if len(st) != 1 || st[0].Name != "cni" || len(st[0].Actions) != 1 || st[0].Actions[0].Type != ActDeletePods || st[0].Actions[0].Pods[0] != "kube-flannel-ds-abc" {
		t.Fatalf("stages: %+v", st)
	}
	st = Plan(Input{CNI: []string{"flannel"}})
	if len(st) != 1 || len(st[0].Notes) != 1 || !strings.Contains(st[0].Notes[0], "restart its agents by hand") {
		t.Fatalf("stages: %+v", st)
	}
}

// TestHandoverCommands: by hand, the DNS Service is deleted with the bridge
// and recreated at the bridge's address in one command line.
func TestHandoverCommands(t *testing.T) {
	a := Action{Type: ActDNSHandover, Namespace: "kube-system", Name: "kube-dns", Bridge: "kube-system/kube-dns-bridge", OldAddress: "192.168.0.10", Address: "172.24.0.10"}
	cmds := strings.Join(a.Commands(), "\n")
	for _, want := range []string{`.spec.clusterIP="172.24.0.10"`, "kubectl -n kube-system delete svc kube-dns kube-dns-bridge && kubectl create -f kube-dns-new.json"} {
		if !strings.Contains(cmds, want) {
			t.Errorf("handover commands do not say %q:\n%s", want, cmds)
		}
	}
}

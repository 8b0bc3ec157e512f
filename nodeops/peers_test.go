package nodeops_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/nodeops"
)

// withIdentities adds etcd identities to the bundle's report.json: the
// restored cluster of n1 and n2 (n2's peer URL given), and the old one.
func withIdentities(t *testing.T, b, n2Peer, oldCluster string) {
	t.Helper()
	editReport(t, b, func(rep *bundle.Report) {
		rep.Etcd = &bundle.EtcdIdentities{
			New: bundle.EtcdCluster{ClusterID: "5ca1ab1e0000beef", Members: []bundle.EtcdMember{
				{Name: "n1", ID: "1111111111111111", PeerURLs: []string{"https://127.0.0.1:2380"}},
				{Name: "n2", ID: "2222222222222222", PeerURLs: []string{n2Peer}}}},
			Old: bundle.EtcdCluster{ClusterID: oldCluster},
		}
	})
}

// TestApplyRefusesWhileAnOldMemberAnswers: a real etcd member of another
// cluster answers at n2's peer URL (an old member not stopped yet): apply
// on n1 refuses before it starts the kubelet, naming n2 and the cluster;
// once that member is gone, apply passes the check (and goes on to the
// health gate, which has no etcd here to wait for).
func TestApplyRefusesWhileAnOldMemberAnswers(t *testing.T) {
	old := etcdtest.StartT(t)
	ml, err := old.Client().MemberList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	oldID := types.ID(ml.Header.ClusterId).String()
	b, root := makeBundle(t), node(t)
	withIdentities(t, b, old.PeerURL(), oldID)
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, Timeout: 2 * time.Second}
	_, err = nodeops.Apply(context.Background(), cfg)
	if !errors.Is(err, nodeops.ErrRefused) {
		t.Fatalf("Apply beside an old member: %v, want a refusal", err)
	}
	for _, want := range []string{"etcd at " + old.PeerURL() + " on n2 still runs as a member of cluster " + oldID, "(the old cluster)",
		"not of the restored cluster 5ca1ab1e0000beef", "--stop-only on n2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if calls := readCalls(t, root); strings.Contains(calls, "systemctl start kubelet") {
		t.Errorf("the kubelet was started beside an old member:\n%s", calls)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = nodeops.Apply(context.Background(), cfg)
	if err == nil || errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), "[health]") {
		t.Fatalf("Apply once the old member is gone: %v, want it past the peer check, at the health gate", err)
	}
	if calls := readCalls(t, root); !strings.Contains(calls, "systemctl start kubelet") {
		t.Errorf("the kubelet was not started once no old member answered:\n%s", calls)
	}
}

// TestApplyStopOnly: --stop-only backs up and stops the old control plane
// (the etcd data dir moved into the backup) and installs nothing; the next
// apply goes on from there.
func TestApplyStopOnly(t *testing.T) {
	b, root := makeBundle(t), node(t)
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true, StopOnly: true}
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/etcd/member")); !os.IsNotExist(err) {
		t.Errorf("--stop-only left the old etcd member in place: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/kubernetes/admin.conf")); err == nil && string(b) == "new admin.conf\n" {
		t.Errorf("--stop-only installed the bundle's files")
	}
	if calls := readCalls(t, root); strings.Contains(calls, "systemctl start kubelet") {
		t.Errorf("--stop-only started the kubelet:\n%s", calls)
	}
	cfg.StopOnly = false
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/kubernetes/admin.conf")); err != nil || string(b) != "new admin.conf\n" {
		t.Errorf("the apply after --stop-only did not install: %q %v", b, err)
	}
}

func readCalls(t *testing.T, root string) string {
	b, err := os.ReadFile(filepath.Join(root, "calls.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestRollbackWaitsForRestoredMembers: a member of the restored cluster
// still answers at a peer URL of the old cluster (its node not rolled back
// yet): rollback waits for it, up to --timeout, and fails naming it, before
// it starts the old member; once it is gone, rollback goes on.
func TestRollbackWaitsForRestoredMembers(t *testing.T) {
	restored := etcdtest.StartT(t)
	ml, err := restored.Client().MemberList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, root := makeBundle(t), node(t)
	withIdentities(t, b, "http://127.0.0.1:1", "0ld0000000000001")
	p := filepath.Join(b, bundle.ReportFile)
	raw, _ := os.ReadFile(p)
	var rep bundle.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	rep.Etcd.New.ClusterID = types.ID(ml.Header.ClusterId).String()
	rep.Etcd.Old.Members = []bundle.EtcdMember{{Name: "n1", ID: "0000000000000001", PeerURLs: []string{"https://127.0.0.1:2380"}},
		{Name: "n2", ID: "0000000000000002", PeerURLs: []string{restored.PeerURL()}}}
	out, _ := json.Marshal(rep)
	write(t, p, string(out), 0o600)
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); err != nil {
		t.Fatal(err)
	}
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, Timeout: 2 * time.Second}
	_, err = nodeops.Rollback(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "[peers]") || !strings.Contains(err.Error(), "on n2 still runs as a member of the restored cluster "+rep.Etcd.New.ClusterID) {
		t.Fatalf("Rollback beside a restored member: %v", err)
	}
	starts := strings.Count(readCalls(t, root), "systemctl start kubelet")
	if err := restored.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = nodeops.Rollback(context.Background(), cfg)
	if err == nil || strings.Contains(err.Error(), "[peers]") {
		t.Fatalf("Rollback once the restored member is gone: %v, want it past the peer check", err)
	}
	if n := strings.Count(readCalls(t, root), "systemctl start kubelet"); n != starts+1 {
		t.Errorf("the kubelet was started %d times by the rollbacks, want once, after the restored member was gone", n-starts)
	}
}

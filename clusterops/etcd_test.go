package clusterops

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestEtcdIdentity asks a real etcd member (embedded, on 127.0.0.1) who it
// is: as report.json records it, the check passes; recorded with another
// member ID or another cluster ID (an old member answering at a restored
// member's URL), it fails naming the member; a member that does not answer
// fails too.
func TestEtcdIdentity(t *testing.T) {
	srv := etcdtest.StartT(t)
	ml, err := srv.Client().MemberList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, cluster := types.ID(ml.Members[0].ID).String(), types.ID(ml.Header.ClusterId).String()
	rec := func(memberID, clusterID string) *EtcdCheck {
		return &EtcdCheck{Cluster: bundle.EtcdCluster{ClusterID: clusterID, Members: []bundle.EtcdMember{
			{Name: "cp1", ID: memberID, PeerURLs: ml.Members[0].PeerURLs, ClientURLs: []string{srv.Endpoint()}}}}}
	}
	ok := checkEtcdIdentity(context.Background(), rec(id, cluster))
	if !ok.OK || ok.Detail != "1 members (cp1) in etcd cluster "+cluster+", member IDs as report.json records" {
		t.Errorf("the recorded member: %+v", ok)
	}
	for _, c := range []struct {
		name string
		ec   *EtcdCheck
		want string
	}{
		{"another member ID", rec("8e9e05c52164694d", cluster), "member cp1 at " + srv.Endpoint() + ": it is member " + id + ", report.json records 8e9e05c52164694d"},
		{"another cluster", rec(id, "cdf818194e3a8c32"), "it answers as etcd cluster " + cluster + ", not as the cluster cdf818194e3a8c32 report.json records"},
		{"nobody there", &EtcdCheck{Cluster: bundle.EtcdCluster{Members: []bundle.EtcdMember{{Name: "cp2", ID: id, ClientURLs: []string{"http://127.0.0.1:1"}}}}},
			"member cp2 at http://127.0.0.1:1:"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r := checkEtcdIdentity(ctx, c.ec)
		cancel()
		if r.OK || r.Name != "etcd-identity" || !strings.Contains(r.Detail, c.want) || !strings.Contains(r.Read, "roll back every control-plane node") {
			t.Errorf("%s: %+v, want a failure saying %q", c.name, r, c.want)
		}
	}
}

package clusterops

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/snapshift/snapshift/bundle"
)

// EtcdCheck is what the etcd-identity check needs: the restored cluster
// report.json records (its members' client URLs) and a client
// certificate its members accept.
type EtcdCheck struct {
	Cluster bundle.EtcdCluster
	TLS     *tls.Config
}

// checkEtcdIdentity asks every restored member, at its client URL, for
// its member list: each must answer as the cluster report.json records,
// listing only its members. A restored member that joined the old cluster
// (or an old member that joined the new one) fails it, naming the member.
func checkEtcdIdentity(ctx context.Context, ec *EtcdCheck) CheckResult {
	const name, read = "etcd-identity", "etcdctl endpoint status -w table and member list -w table on each control-plane node; roll back every control-plane node"
	var ok []string
	for _, m := range ec.Cluster.Members {
		for _, u := range m.ClientURLs {
			tlsConfig := ec.TLS
			if !strings.HasPrefix(u, "https://") {
				tlsConfig = nil
			}
			err := func() error {
				cli, err := clientv3.New(clientv3.Config{Endpoints: []string{u}, DialTimeout: 5 * time.Second, TLS: tlsConfig, Logger: zap.NewNop()})
				if err != nil {
					return err
				}
				defer cli.Close()
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				ml, err := cli.MemberList(cctx)
				if err != nil {
					return err
				}
				var live []bundle.EtcdMember
				for _, lm := range ml.Members {
					live = append(live, bundle.EtcdMember{Name: lm.Name, ID: types.ID(lm.ID).String(), PeerURLs: lm.PeerURLs})
				}
				if got := types.ID(ml.Header.MemberId).String(); got != m.ID {
					return fmt.Errorf("it is member %s, report.json records %s", got, m.ID)
				}
				return ec.Cluster.Differs(types.ID(ml.Header.ClusterId).String(), live)
			}()
			if err != nil {
				return fail(name, read, "member %s at %s: %v", m.Name, u, err)
			}
			ok = append(ok, m.Name)
		}
	}
	return pass(name, "%d members (%s) in etcd cluster %s, member IDs as report.json records", len(ok), capNames(ok), ec.Cluster.ClusterID)
}

package rebuild

import (
	"encoding/json"
	"strings"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/snapshot"
)

// oldEtcdToken is the token the old cluster's members were bootstrapped
// with: manifests.source's etcd --initial-cluster-token, else etcd's
// default (kubeadm sets none). from says where it was read.
func oldEtcdToken(c *Config) (token, from string, err error) {
	token, from = snapshot.EtcdDefaultToken, "etcd's default, which kubeadm's clusters use"
	if c.Manifests.Source == "" {
		return token, from, nil
	}
	set, err := manifests.Read(c.Manifests.Source)
	if err != nil || !set.Has(manifests.Etcd) {
		return token, from, err
	}
	m, _ := set.Get(manifests.Etcd)
	ctr, err := m.Container()
	if err != nil {
		return "", "", err
	}
	for _, a := range append(append([]string(nil), ctr.Command...), ctr.Args...) {
		if v, ok := strings.CutPrefix(a, "--initial-cluster-token="); ok {
			return v, m.Path + "'s --initial-cluster-token", nil
		}
	}
	return token, from + " (" + m.Path + " sets no --initial-cluster-token)", nil
}

// chooseEtcdToken sets the restored cluster's token: etcd.initialClusterToken
// when given (never the old cluster's), else one derived from the input's
// checksum, the members and the networking section, so every member of
// the bundle agrees and a rebuild of the same input and configuration
// writes the same bytes. It records both clusters' IDs in the report.
func (r *run) chooseEtcdToken(old snapshot.ClusterIdentity, oldToken, from string) error {
	c := r.cfg
	if t := c.Etcd.InitialClusterToken; t == oldToken {
		return option.Errorf("InitialClusterToken", "{} %q is the old cluster's token (%s): the restored members would get the old "+
			"members' IDs, and an old member still running would take them for its own; leave {} out (a new token is derived) or give another", t, from)
	}
	r.etcdToken = c.Etcd.InitialClusterToken
	if r.etcdToken == "" {
		net, err := json.Marshal(c.Networking)
		if err != nil {
			return err
		}
		if r.etcdToken, err = snapshot.DeriveToken(c.Snapshot, c.InitialCluster(), string(net)); err != nil {
			return err
		}
	}
	next, err := snapshot.IdentityOf(c.InitialCluster(), r.etcdToken)
	if err != nil {
		return err
	}
	if shared := snapshot.SharedMembers(old, next); len(shared) > 0 {
		return option.Errorf("InitialClusterToken", "{} %q gives member %s the old member ID %s: give another {}", r.etcdToken, shared[0].Name, shared[0].ID)
	}
	r.report.Etcd = &bundle.EtcdIdentities{New: etcdCluster(next), Old: etcdCluster(old)}
	for i, m := range r.report.Etcd.New.Members {
		for _, n := range c.Nodes() {
			if n.NodeName == m.Name {
				r.report.Etcd.New.Members[i].ClientURLs = []string{n.ClientURL}
			}
		}
	}
	r.logf("config", "etcd: the restored cluster is %s (token %s), the old one %s: their members cannot take each other's messages",
		next.ClusterID, r.etcdToken, orUnknown(old.ClusterID))
	return nil
}

func etcdCluster(id snapshot.ClusterIdentity) bundle.EtcdCluster {
	out := bundle.EtcdCluster{ClusterID: id.ClusterID, Token: id.Token, Members: []bundle.EtcdMember{}}
	for _, m := range id.Members {
		out.Members = append(out.Members, bundle.EtcdMember{Name: m.Name, ID: m.ID, PeerURLs: m.PeerURLs})
	}
	return out
}

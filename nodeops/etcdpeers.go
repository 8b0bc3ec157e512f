package nodeops

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/snapshift/snapshift/bundle"
)

// Why the peer check: a restored member that an old member can reach (the
// same CA, an old member not stopped yet) must never be taken for one of
// the old cluster's. The bundle gives the restored cluster its own token,
// so their cluster IDs differ and etcd's peers refuse each other's
// messages; this check makes the order sure as well: no restored member
// starts while an old one answers on a peer URL of the bundle, and no old
// member starts again while a restored one answers.

// peerAnswer is what an etcd peer URL says of itself.
type peerAnswer struct {
	url, node string
	// clusterID is the X-Etcd-Cluster-ID its /members answer carries; ""
	// when nothing answered or the answer was not etcd's.
	clusterID string
	// refusedTLS: something answers there but refused this node's peer
	// certificate (another CA): it cannot talk to this member either.
	refusedTLS bool
}

// peerTLS is the node's etcd peer certificate (the one about to run), as
// etcd's peers accept it.
func (h *host) peerTLS() (*tls.Config, error) {
	info := transport.TLSInfo{CertFile: h.path(KubernetesDir + "/pki/etcd/peer.crt"), KeyFile: h.path(KubernetesDir + "/pki/etcd/peer.key"),
		TrustedCAFile: h.path(KubernetesDir + "/pki/etcd/ca.crt")}
	return info.ClientConfig()
}

// askPeer asks url (an etcd peer URL) for its members, as etcd's own
// peers do at boot (GET /members), and reads the cluster ID it answers
// with.
func askPeer(ctx context.Context, client *http.Client, url string) (peerAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/members", nil)
	if err != nil {
		return peerAnswer{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		var cv *tls.CertificateVerificationError
		var ra tls.AlertError
		if errors.As(err, &cv) || errors.As(err, &ra) || strings.Contains(err.Error(), "tls:") {
			return peerAnswer{url: url, refusedTLS: true}, nil
		}
		return peerAnswer{url: url}, nil // nothing there
	}
	resp.Body.Close()
	return peerAnswer{url: url, clusterID: resp.Header.Get("X-Etcd-Cluster-ID")}, nil
}

// otherPeers asks every peer URL of cluster's members but self's and
// returns those that answer as a member of another cluster than want.
func (h *host) otherPeers(ctx context.Context, cluster bundle.EtcdCluster, self, want string) ([]peerAnswer, error) {
	transport := &http.Transport{Proxy: nil}
	for _, m := range cluster.Members {
		for _, u := range m.PeerURLs {
			if m.Name != self && strings.HasPrefix(u, "https://") && transport.TLSClientConfig == nil {
				tlsConfig, err := h.peerTLS()
				if err != nil {
					return nil, fmt.Errorf("the node's etcd peer certificate: %w", err)
				}
				transport.TLSClientConfig = tlsConfig
			}
		}
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: transport}
	defer client.CloseIdleConnections()
	var out []peerAnswer
	for _, m := range cluster.Members {
		if m.Name == self {
			continue
		}
		for _, u := range m.PeerURLs {
			a, err := askPeer(ctx, client, u)
			if err != nil {
				return nil, err
			}
			a.node = m.Name
			switch {
			case a.refusedTLS:
				h.logf("peers", "%s (%s) answers but refuses this node's etcd peer certificate (another CA): it cannot join this member", u, m.Name)
			case a.clusterID != "" && a.clusterID != want:
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// checkNoOldPeers refuses to start a restored member while a peer URL of
// the bundle answers as a member of another cluster (the old one).
func (a *applyRun) checkNoOldPeers(ctx context.Context) error {
	e := a.b.report.Etcd
	if e == nil || a.cfg.SkipHealth {
		return nil
	}
	others, err := a.otherPeers(ctx, e.New, a.b.node.Name, e.New.ClusterID)
	if err != nil {
		return err
	}
	if len(others) > 0 {
		o := others[0]
		return refused{fmt.Errorf("etcd at %s on %s still runs as a member of cluster %s (%s), not of the restored cluster %s: "+
			"stop it first (snapshift node apply --stop-only on %s, or stop its etcd), then run this apply again",
			o.url, o.node, o.clusterID, whichCluster(e, o.clusterID), e.New.ClusterID, o.node)}
	}
	a.logf("peers", "no peer URL of the bundle answers as a member of another etcd cluster than the restored %s", e.New.ClusterID)
	return nil
}

// waitNoRestoredPeers waits (up to the timeout) until no peer URL of the
// old cluster answers as a member of the restored one, before an old
// member starts again: nodes rolled back by their deadlines do not stop
// at the same moment.
func (h *host) waitNoRestoredPeers(ctx context.Context, b *nodeBundle) error {
	e := b.report.Etcd
	if e == nil || h.cfg.SkipHealth {
		return nil
	}
	cluster := e.Old
	if len(cluster.Members) == 0 {
		cluster = e.New
	}
	return h.waitFor(ctx, "the restored etcd members to stop", func(ctx context.Context) error {
		others, err := h.otherPeers(ctx, cluster, b.node.Name, "")
		if err != nil {
			return err
		}
		for _, o := range others {
			if o.clusterID == e.New.ClusterID {
				h.logf("peers", "waiting: etcd at %s on %s still runs as a member of the restored cluster %s", o.url, o.node, o.clusterID)
				return fmt.Errorf("etcd at %s on %s still runs as a member of the restored cluster %s: roll that node back too", o.url, o.node, o.clusterID)
			}
		}
		return nil
	})
}

func whichCluster(e *bundle.EtcdIdentities, id string) string {
	switch {
	case id == e.Old.ClusterID:
		return "the old cluster"
	case e.Old.ClusterID == "":
		return "the old cluster, most likely: report.json does not know the old cluster's ID"
	}
	return "a cluster this bundle does not know"
}

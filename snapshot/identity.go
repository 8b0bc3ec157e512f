package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
)

// EtcdDefaultToken is etcd's default --initial-cluster-token, and so the
// token of every cluster bootstrapped without one (kubeadm sets none).
const EtcdDefaultToken = "etcd-cluster"

// TokenPrefix starts every token DeriveToken makes.
const TokenPrefix = "snapshift-"

// Why a restore needs a token of its own: etcd derives a member's ID from
// its peer URLs and the cluster token, and the cluster ID from the member
// IDs. A restore with the old cluster's token and peer URLs gives the
// restored members the old members' IDs and the old cluster ID, so a
// restored member that an old member can still reach (the old CA, an old
// member not yet stopped) is taken for one of its own: it follows the old
// leader and takes the old cluster's log on top of the restored store.
// With another token the IDs differ, and etcd's peers refuse each other's
// messages ("cluster ID mismatch").

// DeriveToken is the default cluster token of a restore: TokenPrefix and 16
// hex digits of sha256 over the snapshot's last 32 bytes (its sha256
// trailer, so every member restored from one file agrees) and the given
// parts (the initial cluster, a configuration's digest). The same input and
// parts give the same token, so two rebuilds of one input write the same
// bytes; another snapshot, or another cluster layout, gives another.
func DeriveToken(snapshotPath string, parts ...string) (string, error) {
	f, err := os.Open(snapshotPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	tail := make([]byte, sha256.Size)
	if st.Size() < int64(len(tail)) {
		tail = tail[:st.Size()]
	}
	if _, err := f.ReadAt(tail, st.Size()-int64(len(tail))); err != nil && err != io.EOF {
		return "", fmt.Errorf("%s: %w", snapshotPath, err)
	}
	h := sha256.New()
	h.Write(tail)
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return TokenPrefix + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ClusterIdentity is who an etcd cluster is to its peers: its cluster ID
// and each member's ID, in etcd's hex form (as `etcdctl member list` and
// etcd's log print them).
type ClusterIdentity struct {
	ClusterID string           `json:"clusterID,omitempty"`
	Token     string           `json:"initialClusterToken,omitempty"`
	Members   []MemberIdentity `json:"members"`
}

// MemberIdentity is one member's ID, name and peer URLs.
type MemberIdentity struct {
	Name     string   `json:"name"`
	ID       string   `json:"id"`
	PeerURLs []string `json:"peerURLs"`
}

// MemberID is the member named name, or nil.
func (c *ClusterIdentity) MemberID(name string) string {
	for _, m := range c.Members {
		if m.Name == name {
			return m.ID
		}
	}
	return ""
}

// IdentityOf is the identity etcd's restore gives a cluster bootstrapped
// from initialCluster ("name=peerURL,...") and token: etcd's own
// membership code computes it.
func IdentityOf(initialCluster, token string) (ClusterIdentity, error) {
	urls, err := types.NewURLsMap(initialCluster)
	if err != nil {
		return ClusterIdentity{}, fmt.Errorf("initial cluster %q: %w", initialCluster, err)
	}
	c, err := membership.NewClusterFromURLsMap(zap.NewNop(), token, urls)
	if err != nil {
		return ClusterIdentity{}, fmt.Errorf("initial cluster %q: %w", initialCluster, err)
	}
	id := ClusterIdentity{ClusterID: c.ID().String(), Token: token}
	for _, m := range c.Members() {
		id.Members = append(id.Members, MemberIdentity{Name: m.Name, ID: m.ID.String(), PeerURLs: sortedCopy(m.PeerURLs)})
	}
	sortMembers(id.Members)
	return id, nil
}

// OldIdentity is the identity of the cluster a snapshot was saved from:
// its members as the snapshot's members bucket lists them. The cluster ID
// is not in the snapshot (etcd keeps it in the WAL); it is given when
// token explains it: the members whose ID etcd derives from their peer
// URLs and token were bootstrapped together, and the cluster ID is theirs
// (members added later have IDs with a time in them).
func (s *Snapshot) OldIdentity(token string) (ClusterIdentity, error) {
	var id ClusterIdentity
	err := s.ForEachInBucket([]byte(schema.Members.Name()), func(k, v []byte) error {
		var m struct {
			ID       uint64   `json:"id"`
			Name     string   `json:"name"`
			PeerURLs []string `json:"peerURLs"`
		}
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("members bucket: key %q: %w", k, err)
		}
		id.Members = append(id.Members, MemberIdentity{Name: m.Name, ID: types.ID(m.ID).String(), PeerURLs: sortedCopy(m.PeerURLs)})
		return nil
	})
	if err != nil {
		return id, err
	}
	sortMembers(id.Members)
	var boot []string
	for _, m := range id.Members {
		urls, err := types.NewURLs(m.PeerURLs)
		if err != nil || m.Name == "" {
			continue
		}
		if membership.NewMember(m.Name, urls, token, nil).ID.String() == m.ID {
			boot = append(boot, m.Name+"="+strings.Join(m.PeerURLs, ","+m.Name+"="))
		}
	}
	if len(boot) > 0 {
		if b, err := IdentityOf(strings.Join(boot, ","), token); err == nil {
			id.ClusterID, id.Token = b.ClusterID, token
		}
	}
	return id, nil
}

// SharedMembers are the members of next whose ID old also holds: a
// restored member that an old member would take for one of its own.
func SharedMembers(old, next ClusterIdentity) []MemberIdentity {
	ids := map[string]bool{}
	for _, m := range old.Members {
		ids[m.ID] = true
	}
	var out []MemberIdentity
	for _, m := range next.Members {
		if ids[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

func sortMembers(ms []MemberIdentity) {
	sort.Slice(ms, func(i, j int) bool {
		return ms[i].Name < ms[j].Name || (ms[i].Name == ms[j].Name && ms[i].ID < ms[j].ID)
	})
}

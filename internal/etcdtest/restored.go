package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// RestoredConfig describes a member whose data dir was produced by `etcdutl snapshot restore`
// (go.etcd.io/etcd/etcdutl/v3/snapshot RestoreConfig).
//
// etcd boots such a member from its WAL: the member ID, the cluster ID and every member's peer URLs
// come from what the restore wrote, and the initial cluster, cluster state and token given at start
// are ignored. So Name and PeerURL must be the ones given to the restore, and all members of a
// restored cluster must be started together (StartRestoredCluster): none is ready before a quorum
// has elected a leader.
type RestoredConfig struct {
	// DataDir is the restored data dir (RestoreConfig.OutputDataDir); it must hold member/wal.
	// Required. It is never removed by Close.
	DataDir string
	// Name is the member name given to the restore (RestoreConfig.Name). Required.
	Name string
	// PeerURL is the member's peer URL given to the restore (RestoreConfig.PeerURLs[0]), on 127.0.0.1
	// with an explicit port (see FreePort). Required; checked against the restored membership after start.
	PeerURL string
	// InitialCluster is the value given to the restore (RestoreConfig.InitialCluster). Optional; when
	// set it must list Name=PeerURL. etcd itself does not read it for a restored member.
	InitialCluster string
	// ClientPort is the client port. Zero: a free port.
	ClientPort int
	// Logger receives etcd's own logs. Nil: errors only, to stderr.
	Logger *zap.Logger
	// StartTimeout bounds the wait for the member to become ready. Zero: DefaultStartTimeout.
	StartTimeout time.Duration
}

// Validate checks that the config can describe a restored member on 127.0.0.1.
func (c RestoredConfig) Validate() error {
	if c.Name == "" {
		return errors.New("etcdtest: restored member: Name is required")
	}
	if c.DataDir == "" {
		return fmt.Errorf("etcdtest: restored member %s: DataDir is required", c.Name)
	}
	walDir := filepath.Join(c.DataDir, "member", "wal")
	if fi, err := os.Stat(walDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("etcdtest: restored member %s: %s has no member/wal: not a restored data dir", c.Name, c.DataDir)
	}
	u, err := url.Parse(c.PeerURL)
	if err != nil || u.Scheme != "http" || u.Hostname() != Host || u.Port() == "" || u.Port() == "0" {
		return fmt.Errorf("etcdtest: restored member %s: PeerURL %q must be http://%s:<port>", c.Name, c.PeerURL, Host)
	}
	if c.InitialCluster != "" {
		m, err := types.NewURLsMap(c.InitialCluster)
		if err != nil {
			return fmt.Errorf("etcdtest: restored member %s: InitialCluster %q: %w", c.Name, c.InitialCluster, err)
		}
		if !slices.Contains(m[c.Name].StringSlice(), c.PeerURL) {
			return fmt.Errorf("etcdtest: restored member %s: InitialCluster %q does not list %s=%s",
				c.Name, c.InitialCluster, c.Name, c.PeerURL)
		}
	}
	return nil
}

// StartRestored starts one restored member and waits until it serves requests. Use it for a
// single-member restore; members of a larger restored cluster must be started with StartRestoredCluster.
func StartRestored(ctx context.Context, cfg RestoredConfig) (*Server, error) {
	servers, err := StartRestoredCluster(ctx, []RestoredConfig{cfg})
	if err != nil {
		return nil, err
	}
	return servers[0], nil
}

// StartRestoredCluster starts every member of a restored cluster at once, each on its own 127.0.0.1
// ports, and waits until all of them serve requests. On error every started member is closed.
func StartRestoredCluster(ctx context.Context, members []RestoredConfig) ([]*Server, error) {
	if len(members) == 0 {
		return nil, errors.New("etcdtest: restored cluster: no members")
	}
	for _, m := range members {
		if err := m.Validate(); err != nil {
			return nil, err
		}
	}
	servers := make([]*Server, 0, len(members))
	closeAll := func() {
		_ = CloseAll(servers...) // already failing; the start error is the one to report
	}
	for _, m := range members {
		s, err := launchRestored(m)
		if err != nil {
			closeAll()
			return nil, err
		}
		servers = append(servers, s)
	}
	for i, s := range servers {
		if err := s.waitReady(ctx, members[i].StartTimeout); err != nil {
			closeAll()
			return nil, err
		}
	}
	for i, s := range servers {
		if err := s.checkRestoredPeerURL(); err != nil {
			closeAll()
			return nil, fmt.Errorf("etcdtest: restored member %s: %w", members[i].Name, err)
		}
	}
	return servers, nil
}

// launchRestored starts the embedded server of one restored member without waiting for it.
func launchRestored(m RestoredConfig) (*Server, error) {
	silenced := new(atomic.Bool)
	lg := m.Logger
	if lg == nil {
		lg = quietLogger(silenced)
	}
	var lastErr error
	for range portAttempts {
		clientPort := m.ClientPort
		if clientPort == 0 {
			p, err := FreePort()
			if err != nil {
				return nil, err
			}
			clientPort = p
		}
		ecfg := newEmbedConfig(memberConfig{
			name:       m.Name,
			dir:        m.DataDir,
			peerURL:    m.PeerURL,
			clientPort: clientPort,
			logger:     lg,
		})
		// Ignored by etcd once it finds the WAL, but Validate wants a consistent value.
		ecfg.InitialCluster = m.Name + "=" + m.PeerURL
		ecfg.ClusterState = embed.ClusterStateFlagExisting
		e, err := embed.StartEtcd(ecfg)
		if err != nil {
			lastErr = fmt.Errorf("etcdtest: start restored member %s: %w", m.Name, err)
			if m.ClientPort == 0 && isAddrInUse(err) && !strings.Contains(err.Error(), portOf(m.PeerURL)) {
				continue
			}
			return nil, lastErr
		}
		return &Server{etcd: e, logger: lg, silenced: silenced, name: m.Name, dataDir: m.DataDir, peerURL: m.PeerURL,
			endpoint: hostURL(clientPort)}, nil
	}
	return nil, lastErr
}

// checkRestoredPeerURL compares the peer URL the member listens on with the one the restore recorded
// for its member ID. A mismatch would leave the other members unable to reach it.
func (s *Server) checkRestoredPeerURL() error {
	srv := s.etcd.Server
	m := srv.Cluster().Member(srv.MemberID())
	if m == nil {
		return fmt.Errorf("member ID %s is not in the restored membership", srv.MemberID())
	}
	if !slices.Contains(m.PeerURLs, s.peerURL) {
		return fmt.Errorf("listens on %s but was restored with peer URLs %v", s.peerURL, m.PeerURLs)
	}
	return nil
}

func portOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return ":" + u.Port()
}

// RestoreConfig describes restoring one snapshot file into the data dirs of a new local cluster
// with etcd's own restore code (go.etcd.io/etcd/etcdutl/v3/snapshot), as `etcdutl snapshot restore` does.
type RestoreConfig struct {
	// SnapshotPath is the snapshot file. Required.
	SnapshotPath string
	// Dir is the parent directory; member i is restored into Dir/<name i>. Required; the member
	// directories must not exist or be empty.
	Dir string
	// Members is the number of members. Zero: 1.
	Members int
	// NamePrefix names the members NamePrefix0, NamePrefix1, ... Empty: "m".
	NamePrefix string
	// Token is the initial cluster token. Empty: "etcdtest-restored".
	Token string
	// SkipHashCheck restores a file without the sha256 trailer (a raw member/snap/db).
	SkipHashCheck bool
	// RevisionBump and MarkCompacted are passed to the restore; the library applies the bump only
	// when both are set.
	RevisionBump  uint64
	MarkCompacted bool
	// Logger receives the restore's logs. Nil: none.
	Logger *zap.Logger
}

// Restore restores cfg.SnapshotPath into one data dir per member, each with a free 127.0.0.1 peer
// port, and returns the configs to start them with (StartRestored or StartRestoredCluster).
func Restore(cfg RestoreConfig) ([]RestoredConfig, error) {
	if cfg.SnapshotPath == "" || cfg.Dir == "" {
		return nil, errors.New("etcdtest: restore: SnapshotPath and Dir are required")
	}
	n := cfg.Members
	if n <= 0 {
		n = 1
	}
	prefix := cfg.NamePrefix
	if prefix == "" {
		prefix = "m"
	}
	token := cfg.Token
	if token == "" {
		token = "etcdtest-restored"
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}

	members := make([]RestoredConfig, n)
	cluster := make([]string, n)
	for i := range members {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		name := prefix + strconv.Itoa(i)
		members[i] = RestoredConfig{
			DataDir: filepath.Join(cfg.Dir, name),
			Name:    name,
			PeerURL: hostURL(port),
		}
		cluster[i] = name + "=" + members[i].PeerURL
	}
	initialCluster := strings.Join(cluster, ",")
	for i := range members {
		members[i].InitialCluster = initialCluster
		err := snapshot.NewV3(lg).Restore(snapshot.RestoreConfig{
			SnapshotPath:        cfg.SnapshotPath,
			Name:                members[i].Name,
			OutputDataDir:       members[i].DataDir,
			PeerURLs:            []string{members[i].PeerURL},
			InitialCluster:      initialCluster,
			InitialClusterToken: token,
			SkipHashCheck:       cfg.SkipHashCheck,
			RevisionBump:        cfg.RevisionBump,
			MarkCompacted:       cfg.MarkCompacted,
		})
		if err != nil {
			return nil, fmt.Errorf("etcdtest: restore %s as %s: %w", cfg.SnapshotPath, members[i].Name, err)
		}
	}
	return members, nil
}

package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// ClusterConfig describes a new cluster of several members bootstrapped together.
type ClusterConfig struct {
	// Members is the number of members. Zero: 3.
	Members int
	// NamePrefix names the members NamePrefix0, NamePrefix1, ... Empty: "m".
	NamePrefix string
	// Token is the initial cluster token. Empty: embed's default "etcd-cluster", the token of every
	// cluster bootstrapped without one (kubeadm sets none).
	Token string
	// Logger receives every member's etcd logs. Nil: errors only, to stderr, one logger per member.
	Logger *zap.Logger
	// StartTimeout bounds the wait for each member to become ready. Zero: DefaultStartTimeout.
	StartTimeout time.Duration
}

// StartCluster bootstraps a new cluster of cfg.Members members on 127.0.0.1, each with free client
// and peer ports and a temporary data dir of its own (removed by Close), and waits until every member
// serves requests. A start that loses a port picked by FreePort is retried on new ports. On error
// every started member is closed.
func StartCluster(ctx context.Context, cfg ClusterConfig) ([]*Server, error) {
	n := cfg.Members
	if n <= 0 {
		n = 3
	}
	prefix := cfg.NamePrefix
	if prefix == "" {
		prefix = "m"
	}
	var lastErr error
	for range portAttempts {
		servers, err := launchCluster(cfg, n, prefix)
		if err != nil {
			lastErr = err
			if isAddrInUse(err) {
				continue
			}
			return nil, err
		}
		for _, s := range servers {
			if err := s.waitReady(ctx, cfg.StartTimeout); err != nil {
				_ = CloseAll(servers...) // the start error is the one to report
				return nil, err
			}
		}
		return servers, nil
	}
	return nil, lastErr
}

// launchCluster starts the embedded servers of a new cluster without waiting for them: a member of a
// larger cluster is not ready before a quorum has elected a leader.
func launchCluster(cfg ClusterConfig, n int, prefix string) ([]*Server, error) {
	type member struct {
		name, dir, peerURL string
		clientPort         int
	}
	members := make([]member, n)
	cluster := make([]string, n)
	var servers []*Server
	fail := func(err error) ([]*Server, error) {
		_ = CloseAll(servers...) // already failing
		for _, m := range members[len(servers):] {
			if m.dir != "" {
				_ = os.RemoveAll(m.dir)
			}
		}
		return nil, err
	}
	for i := range members {
		m := &members[i]
		m.name = prefix + strconv.Itoa(i)
		d, err := os.MkdirTemp("", "etcdtest-"+m.name+"-")
		if err != nil {
			return fail(fmt.Errorf("etcdtest: create data dir: %w", err))
		}
		m.dir = d
		peerPort, err := FreePort()
		if err != nil {
			return fail(err)
		}
		if m.clientPort, err = FreePort(); err != nil {
			return fail(err)
		}
		m.peerURL = hostURL(peerPort)
		cluster[i] = m.name + "=" + m.peerURL
	}
	for _, m := range members {
		silenced := new(atomic.Bool)
		lg := cfg.Logger
		if lg == nil {
			lg = quietLogger(silenced)
		}
		ecfg := newEmbedConfig(memberConfig{
			name:       m.name,
			dir:        m.dir,
			peerURL:    m.peerURL,
			clientPort: m.clientPort,
			logger:     lg,
		})
		ecfg.InitialCluster = strings.Join(cluster, ",")
		ecfg.ClusterState = embed.ClusterStateFlagNew
		if cfg.Token != "" {
			ecfg.InitialClusterToken = cfg.Token
		}
		e, err := embed.StartEtcd(ecfg)
		if err != nil {
			return fail(fmt.Errorf("etcdtest: start %s: %w", m.name, err))
		}
		servers = append(servers, &Server{etcd: e, logger: lg, silenced: silenced, name: m.name, dataDir: m.dir,
			peerURL: m.peerURL, endpoint: hostURL(m.clientPort), removeDir: true})
	}
	return servers, nil
}

// LaunchRestored starts one restored member and returns without waiting for it to serve requests:
// a member of a larger restored cluster is not ready before a quorum runs, so a rolling replacement
// starts the members one at a time. Its Client is nil until WaitReady returns; its embedded server
// (Etcd) can be inspected at once. The peer URL is checked against the restored membership.
func LaunchRestored(cfg RestoredConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := launchRestored(cfg)
	if err != nil {
		return nil, err
	}
	s.startTimeout = cfg.StartTimeout
	if err := s.checkRestoredPeerURL(); err != nil {
		_ = s.Close() // the peer URL error is the one to report
		return nil, fmt.Errorf("etcdtest: restored member %s: %w", cfg.Name, err)
	}
	return s, nil
}

// WaitReady waits until a member started by LaunchRestored serves requests, at most its
// StartTimeout, and connects its client. It returns at once if the member is ready already.
func (s *Server) WaitReady(ctx context.Context) error {
	if s.client != nil {
		return nil
	}
	return s.waitReady(ctx, s.startTimeout)
}

// WaitPortFree waits until the port of rawURL (a peer or client URL on Host) can be bound again,
// as after a member listening on it was closed, at most timeout.
func WaitPortFree(ctx context.Context, rawURL string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := Host + portOf(rawURL)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l.Close()
		}
		if !isAddrInUse(err) {
			return fmt.Errorf("etcdtest: bind %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("etcdtest: %s still in use", addr), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Crash stops the member as a killed process stops: at once, without handing its leadership over
// (Close, like etcd on SIGTERM, transfers it to another member first), then releases what Close
// releases. Like Close, it is safe to call more than once.
func (s *Server) Crash() error {
	s.silenced.Store(true)
	s.etcd.Server.HardStop()
	return s.Close()
}

package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Host is the only address any server of this package binds.
const Host = "127.0.0.1"

// DefaultStartTimeout bounds how long Start and its variants wait for a server to become ready
// when the config leaves StartTimeout zero.
const DefaultStartTimeout = 30 * time.Second

// Heartbeat and election timing of every server. Shorter than etcd's defaults (100ms / 1s) so that
// restored multi-member clusters elect a leader quickly, but long enough not to flap on a busy machine.
const (
	tickMs     = 50
	electionMs = 500
)

// portAttempts is how many times a start is retried with new ports when one picked by FreePort was
// taken by someone else before etcd bound it.
const portAttempts = 5

// Config describes a new single-member etcd server.
type Config struct {
	// Dir is the data directory. Empty: a new temporary directory, removed by Close.
	// A given directory is kept; if it already holds a member, etcd restarts that member.
	Dir string
	// Name is the member name. Empty: "etcdtest".
	Name string
	// Logger receives etcd's own logs. Nil: errors only, to stderr.
	Logger *zap.Logger
	// StartTimeout bounds the wait for the server to become ready. Zero: DefaultStartTimeout.
	StartTimeout time.Duration
}

// Server is a running embedded etcd member with a client connected to it.
type Server struct {
	etcd   *embed.Etcd
	client *clientv3.Client
	logger *zap.Logger
	// silenced turns the default logger off; set when the server is being closed.
	silenced *atomic.Bool
	name     string
	dataDir  string
	endpoint string
	peerURL  string
	// removeDir is set when the data dir was created by this package and must go with the server.
	removeDir bool
	// startTimeout bounds WaitReady (LaunchRestored); zero: DefaultStartTimeout.
	startTimeout time.Duration

	closeOnce sync.Once
	closeErr  error
}

// Start starts a new single-member cluster on 127.0.0.1 with free client and peer ports and waits
// until it serves requests.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	name := cfg.Name
	if name == "" {
		name = "etcdtest"
	}
	silenced := new(atomic.Bool)
	lg := cfg.Logger
	if lg == nil {
		lg = quietLogger(silenced)
	}
	dir, removeDir := cfg.Dir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "etcdtest-")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: create data dir: %w", err)
		}
		dir, removeDir = d, true
	}

	var lastErr error
	for range portAttempts {
		peerPort, err := FreePort()
		if err != nil {
			lastErr = err
			break
		}
		clientPort, err := FreePort()
		if err != nil {
			lastErr = err
			break
		}
		peerURL := hostURL(peerPort)
		ecfg := newEmbedConfig(memberConfig{
			name:       name,
			dir:        dir,
			peerURL:    peerURL,
			clientPort: clientPort,
			logger:     lg,
		})
		ecfg.InitialCluster = name + "=" + peerURL
		ecfg.ClusterState = embed.ClusterStateFlagNew
		ecfg.InitialClusterToken = "etcdtest-" + name

		e, err := embed.StartEtcd(ecfg)
		if err != nil {
			lastErr = fmt.Errorf("etcdtest: start %s: %w", name, err)
			if isAddrInUse(err) {
				continue
			}
			break
		}
		s := &Server{etcd: e, logger: lg, silenced: silenced, name: name, dataDir: dir, peerURL: peerURL,
			endpoint: hostURL(clientPort), removeDir: removeDir}
		if err := s.waitReady(ctx, cfg.StartTimeout); err != nil {
			_ = s.Close() // the start error is the one to report
			return nil, err
		}
		return s, nil
	}
	if removeDir {
		_ = os.RemoveAll(dir)
	}
	return nil, lastErr
}

// memberConfig holds what differs between the members this package starts.
type memberConfig struct {
	name       string
	dir        string
	peerURL    string
	clientPort int
	logger     *zap.Logger
}

// newEmbedConfig builds the embed config shared by every server: loopback only, quiet, fast ticks,
// no auto compaction, no metrics or gateway listeners of its own.
func newEmbedConfig(m memberConfig) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	peer, _ := url.Parse(m.peerURL) // built by hostURL, always valid
	client, _ := url.Parse(hostURL(m.clientPort))
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(m.logger)
	cfg.LogLevel = "error"
	cfg.TickMs = tickMs
	cfg.ElectionMs = electionMs
	cfg.EnableGRPCGateway = false
	// Test data need not survive a power cut; skipping fsync keeps a start and a few hundred puts fast.
	cfg.UnsafeNoFsync = true
	return cfg
}

// waitReady waits until the server serves client requests, then connects a client.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-s.etcd.Server.ReadyNotify():
	case err := <-s.etcd.Err():
		return fmt.Errorf("etcdtest: %s failed while starting: %w", s.name, err)
	case <-s.etcd.Server.StopNotify():
		return fmt.Errorf("etcdtest: %s stopped while starting", s.name)
	case <-timer.C:
		return fmt.Errorf("etcdtest: %s not ready after %s", s.name, timeout)
	case <-ctx.Done():
		return fmt.Errorf("etcdtest: waiting for %s: %w", s.name, ctx.Err())
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      s.logger.Named("client"),
	})
	if err != nil {
		return fmt.Errorf("etcdtest: connect to %s at %s: %w", s.name, s.endpoint, err)
	}
	s.client = cli
	return nil
}

// Close stops the server and removes its data dir if Start created it. It is safe to call more
// than once; later calls return the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.silenced.Store(true)
		if s.client != nil {
			if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
				s.closeErr = fmt.Errorf("etcdtest: close client of %s: %w", s.name, err)
			}
		}
		s.etcd.Close()
		if s.removeDir {
			if err := os.RemoveAll(s.dataDir); err != nil && s.closeErr == nil {
				s.closeErr = fmt.Errorf("etcdtest: remove data dir of %s: %w", s.name, err)
			}
		}
	})
	return s.closeErr
}

// Client returns the client connected to this member only.
func (s *Server) Client() *clientv3.Client { return s.client }

// Endpoint returns the client URL, e.g. "http://127.0.0.1:40123".
func (s *Server) Endpoint() string { return s.endpoint }

// PeerURL returns the peer URL the member listens on and advertises.
func (s *Server) PeerURL() string { return s.peerURL }

// Name returns the member name.
func (s *Server) Name() string { return s.name }

// DataDir returns the member's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// Etcd returns the underlying embedded server, for checks this package does not wrap.
func (s *Server) Etcd() *embed.Etcd { return s.etcd }

// Put writes key=value and returns the revision of the write.
func (s *Server) Put(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := s.client.Put(ctx, key, string(value))
	if err != nil {
		return 0, fmt.Errorf("etcdtest: put %q: %w", key, err)
	}
	return resp.Header.Revision, nil
}

// Delete deletes key and returns the revision after the delete. Deleting a missing key is an error,
// because it writes nothing and is almost always a mistake in a test.
func (s *Server) Delete(ctx context.Context, key string) (int64, error) {
	resp, err := s.client.Delete(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("etcdtest: delete %q: %w", key, err)
	}
	if resp.Deleted == 0 {
		return 0, fmt.Errorf("etcdtest: delete %q: no such key", key)
	}
	return resp.Header.Revision, nil
}

// Compact compacts the store at rev and waits until the compaction is applied to the backend.
func (s *Server) Compact(ctx context.Context, rev int64) error {
	if _, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("etcdtest: compact at %d: %w", rev, err)
	}
	return nil
}

// Revision returns the store's current revision.
func (s *Server) Revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcdtest: read revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// LiveKVs returns every live key with its metadata, sorted by key.
func (s *Server) LiveKVs(ctx context.Context) ([]*mvccpb.KeyValue, error) {
	resp, err := s.client.Get(ctx, "\x00", clientv3.WithFromKey(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("etcdtest: list keys: %w", err)
	}
	return resp.Kvs, nil
}

// SaveSnapshot writes a snapshot of this member to path exactly as `etcdctl snapshot save` does:
// the bbolt file followed by its sha256, written to path+".part" and renamed.
func (s *Server) SaveSnapshot(ctx context.Context, path string) error {
	_, err := snapshot.SaveWithVersion(ctx, s.logger, clientv3.Config{
		Endpoints:   []string{s.endpoint},
		DialTimeout: 5 * time.Second,
	}, path)
	if err != nil {
		return fmt.Errorf("etcdtest: save snapshot of %s to %s: %w", s.name, path, err)
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
//
// The port lies below the kernel's ephemeral range (net.ipv4.ip_local_port_range) where that
// range leaves room: a port from that range can be taken at any moment as the source port of an
// outgoing connection, and is, when a member dials the peer URL of a member that is down (Linux
// may connect such a dial to itself), so a member restarted on its old peer URL would find the
// port in use. Below the range only listeners take ports.
func FreePort() (int, error) {
	lo, hi := portRange()
	for range 64 {
		if hi <= lo {
			break
		}
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort(Host, strconv.Itoa(port)))
		if err != nil {
			continue // taken: pick another
		}
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("etcdtest: find a free port: %w", err)
		}
		return port, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(Host, "0"))
	if err != nil {
		return 0, fmt.Errorf("etcdtest: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("etcdtest: find a free port: %w", err)
	}
	return port, nil
}

// lowestPort is the lowest port FreePort picks: above the ports services usually listen on.
const lowestPort = 20000

// portRange returns the ports FreePort picks from, [lo, hi): from lowestPort to the start of the
// ephemeral range, or an empty range when the ephemeral range leaves fewer than 1,000 ports below.
func portRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first-lowestPort < 1000 {
		return 0, 0
	}
	return lowestPort, first
}

// hostURL returns the http URL of port on Host.
func hostURL(port int) string {
	return "http://" + net.JoinHostPort(Host, strconv.Itoa(port))
}

// isAddrInUse reports whether a start failed because a port picked by FreePort was taken meanwhile.
func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// quietLogger logs errors only, to stderr, without stack traces, until silenced: a stopping member
// logs its closed listeners and lost peers as errors, which is noise, so Close silences it first.
func quietLogger(silenced *atomic.Bool) *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	cfg.Encoding = "console"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	cfg.Sampling = nil
	cfg.DisableStacktrace = true
	lg, err := cfg.Build(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return silenceableCore{Core: c, silenced: silenced}
	}))
	if err != nil {
		return zap.NewNop()
	}
	return lg
}

// silenceableCore drops every entry once silenced is set.
type silenceableCore struct {
	zapcore.Core
	silenced *atomic.Bool
}

func (c silenceableCore) Enabled(l zapcore.Level) bool {
	return !c.silenced.Load() && c.Core.Enabled(l)
}

func (c silenceableCore) With(fields []zapcore.Field) zapcore.Core {
	return silenceableCore{Core: c.Core.With(fields), silenced: c.silenced}
}

func (c silenceableCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.silenced.Load() || benign(e.Message) {
		return ce
	}
	return c.Core.Check(e, ce)
}

// benign reports errors etcd logs in normal operation of a fresh member: the storage version monitor
// runs once before the first term is written and retries later.
func benign(msg string) bool {
	return msg == "failed to update storage version"
}

// CloseAll closes several servers, typically the members of one cluster. Every member is silenced
// before the first one stops, so that the others do not log its departure. It returns the first error.
func CloseAll(servers ...*Server) error {
	for _, s := range servers {
		s.silenced.Store(true)
	}
	var first error
	for _, s := range servers {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

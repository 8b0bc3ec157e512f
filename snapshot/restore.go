package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/progress"
)

// DefaultRevisionBump is how far a restore moves the revision up by default:
// the amount Kubernetes' etcd restore guide uses. It exceeds any number of
// writes a cluster makes between a snapshot and its restore, so clients
// holding newer resourceVersions still see the revision go forward.
const DefaultRevisionBump = 1_000_000_000

// RestoreConfig configures Restore. Field names follow etcdutl's flags.
type RestoreConfig struct {
	// SnapshotPath is the snapshot to restore. Required.
	SnapshotPath string
	// Name of this member. Default "default".
	Name string
	// DataDir is the new data directory: it must not exist or be empty.
	// Default "<Name>.etcd".
	DataDir string
	// WALDir is an optional separate WAL directory; it must not exist.
	// Default "<DataDir>/member/wal".
	WALDir string
	// PeerURLs this member advertises. Default ["http://localhost:2380"].
	PeerURLs []string
	// InitialCluster lists every member, "name=url,...". Default
	// "<Name>=<PeerURLs[0]>".
	InitialCluster string
	// InitialClusterToken. Default: DeriveToken of the snapshot and
	// InitialCluster, a new token for every restore (as etcd advises), the
	// same for every member restored from one file with one initial
	// cluster. A token that gives a member an ID the snapshot's own members
	// bucket holds (the old cluster's token and peer URLs) is refused.
	InitialClusterToken string
	// SkipHashCheck accepts a snapshot without a sha256 trailer.
	SkipHashCheck bool
	// RevisionBump raises the latest revision by this much and MarkCompacted
	// marks it compacted, so that every client holding an old resourceVersion
	// relists instead of trusting a stale cache. Both or neither; the CLI
	// defaults to DefaultRevisionBump and true.
	RevisionBump  uint64
	MarkCompacted bool
	// KeepAlarms keeps the snapshot's active etcd alarms. Default: they are
	// cleared, since a NOSPACE alarm would leave the new member read-only.
	KeepAlarms bool
	// InitialMmapSize is passed to etcd's restore. Optional.
	InitialMmapSize uint64
	// Logger receives etcd's own restore log. Default: none.
	Logger *zap.Logger

	// validated is set by a successful Validate: Restore does not validate
	// a config again that its caller has just validated (change no field
	// after Validate).
	validated bool
}

// Validate fills defaults and checks the configuration without touching
// the file system beyond reading it. Every mistake etcd's restore would
// stop at in its own words (a member missing from the initial cluster,
// peer URLs that do not match it, a duplicate URL) is refused here first,
// naming the option to change: an *option.Error.
func (c *RestoreConfig) Validate() error {
	if c.SnapshotPath == "" {
		return errors.New("no snapshot given")
	}
	if c.Name == "" {
		c.Name = "default"
	}
	if c.DataDir == "" {
		c.DataDir = c.Name + ".etcd"
	}
	if len(c.PeerURLs) == 0 {
		c.PeerURLs = []string{"http://localhost:2380"}
	}
	if c.InitialCluster == "" {
		c.InitialCluster = c.Name + "=" + strings.Join(c.PeerURLs, ","+c.Name+"=")
	}
	if (c.RevisionBump == 0) != !c.MarkCompacted {
		return option.Errorf("RevisionBump", "{} and {MarkCompacted} go together: give both (the default) or neither")
	}
	members, err := c.checkMembers()
	if err != nil {
		return err
	}
	if c.InitialClusterToken == "" {
		// The initial cluster in one order, so that every member's restore
		// derives the same token however its command line lists them. An
		// unreadable snapshot is left to the restore's own open, whose
		// error names the cause.
		c.InitialClusterToken, _ = DeriveToken(c.SnapshotPath, members.String())
	}
	if err := c.checkDirs(); err != nil {
		return err
	}
	c.validated = true
	return nil
}

// clusterMembers is an initial cluster: each member's peer URLs, in the
// order given.
type clusterMembers struct {
	names []string
	urls  map[string][]string
}

// String is the initial cluster in etcd's order ("name=url,...", sorted).
func (m clusterMembers) String() string {
	var pairs []string
	for _, n := range m.names {
		for _, u := range m.urls[n] {
			pairs = append(pairs, n+"="+u)
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// checkMembers checks the member's name, its peer URLs and the initial
// cluster against each other as etcd's restore does (etcdserver's
// VerifyBootstrap), comparing URLs as written: nothing is resolved, so a
// restore never asks DNS (and a name and an address of one host are two
// URLs, which etcd's own comparison would resolve).
func (c *RestoreConfig) checkMembers() (clusterMembers, error) {
	m := clusterMembers{urls: map[string][]string{}}
	if strings.ContainsAny(c.Name, "=, \t\n") {
		return m, option.Errorf("Name", "{} %q cannot hold '=', ',' or spaces: {InitialCluster} lists members as NAME=PEER_URL,...", c.Name)
	}
	seen := map[string]bool{}
	for _, u := range c.PeerURLs {
		if err := checkPeerURL(u); err != nil {
			return m, option.Errorf("PeerURLs", "{} %q %s", u, err)
		}
		if seen[u] {
			return m, option.Errorf("PeerURLs", "{} lists %s twice: give each peer URL once", u)
		}
		seen[u] = true
	}
	owner := map[string]string{}
	for _, entry := range strings.Split(c.InitialCluster, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(entry), "=")
		name, u = strings.TrimSpace(name), strings.TrimSpace(u)
		if !ok || name == "" {
			return m, option.Errorf("InitialCluster", "{} %q: %q is not NAME=PEER_URL (each member, comma-separated, e.g. %s=https://10.0.0.11:2380)",
				c.InitialCluster, strings.TrimSpace(entry), c.Name)
		}
		if err := checkPeerURL(u); err != nil {
			return m, option.Errorf("InitialCluster", "{}: member %q's peer URL %q %s", name, u, err)
		}
		switch prev, dup := owner[u]; {
		case dup && prev == name:
			return m, option.Errorf("InitialCluster", "{} lists %s=%s twice: give each member's peer URL once", name, u)
		case dup:
			return m, option.Errorf("InitialCluster", "{} gives the peer URL %s to both %s and %s: every member has peer URLs of its own", u, prev, name)
		}
		owner[u] = name
		if _, ok := m.urls[name]; !ok {
			m.names = append(m.names, name)
		}
		m.urls[name] = append(m.urls[name], u)
	}
	own, ok := m.urls[c.Name]
	if !ok {
		return m, option.Errorf("InitialCluster", "{} %q does not name this member %q: add %s=%s to {}, or give {Name} one of its members (%s)",
			c.InitialCluster, c.Name, c.Name, strings.Join(c.PeerURLs, ","+c.Name+"="), strings.Join(m.names, ", "))
	}
	if !sameURLs(own, c.PeerURLs) {
		return m, option.Errorf("PeerURLs", "{} %s is not what {InitialCluster} lists for member %s (%s): give {} %s, or change %s's entry in {InitialCluster}",
			strings.Join(c.PeerURLs, ","), c.Name, strings.Join(own, ","), strings.Join(own, ","), c.Name)
	}
	return m, nil
}

// sameURLs reports whether a and b hold the same URLs (in any order).
func sameURLs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// checkDirs checks the data dir and the WAL dir: apart from each other,
// the data dir new or empty, the WAL dir new, both parents there.
func (c *RestoreConfig) checkDirs() error {
	if c.WALDir != "" {
		data, derr := filepath.Abs(c.DataDir)
		wal, werr := filepath.Abs(c.WALDir)
		switch {
		case derr != nil || werr != nil:
		case wal == data:
			return option.Errorf("WALDir", "{} %s is the {DataDir} itself: give the WAL a directory of its own, or leave {} out (the WAL then goes in <data dir>/member/wal)", c.WALDir)
		case strings.HasPrefix(wal, data+string(filepath.Separator)):
			return option.Errorf("WALDir", "{} %s is inside the {DataDir} %s: give a directory outside it, or leave {} out (the WAL then goes in <data dir>/member/wal)", c.WALDir, c.DataDir)
		case strings.HasPrefix(data, wal+string(filepath.Separator)):
			return option.Errorf("DataDir", "{} %s is inside the {WALDir} %s: give them directories apart", c.DataDir, c.WALDir)
		}
	}
	empty, err := fsutil.IsEmptyOrMissingDir(c.DataDir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", c.DataDir, err)
	}
	if !empty {
		return fmt.Errorf("data dir %s is not empty (%w): restore only into a new or empty directory", c.DataDir, fsutil.ErrExists)
	}
	if c.WALDir != "" {
		if _, err := os.Lstat(c.WALDir); err == nil {
			return fmt.Errorf("wal dir %s %w: restore only into a new directory", c.WALDir, fsutil.ErrExists)
		}
	}
	for _, d := range []string{c.DataDir, c.WALDir} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(d)); err != nil || !st.IsDir() {
			return fmt.Errorf("parent directory of %s does not exist: create it first (mkdir -p %s)", d, filepath.Dir(d))
		}
	}
	return nil
}

// checkPeerURL says what is wrong with a peer URL, as etcd would refuse it:
// it needs a scheme (http or https), a host and a port, and no path.
func checkPeerURL(s string) error {
	u, err := url.Parse(s)
	bad := err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil
	if !bad {
		_, _, err = net.SplitHostPort(u.Host)
		bad = err != nil
	}
	if bad {
		return errors.New("is not a peer URL like https://10.0.0.11:2380 (http or https, a host and a port, nothing after them)")
	}
	return nil
}

// Restore restores one member's data directory from a snapshot with etcd's
// own restore code (new member metadata, optional revision bump). It first
// opens the snapshot with Open, so a bad file gets this package's clear
// error; then it restores into a temporary directory beside DataDir and
// renames it into place, so a failure leaves nothing behind. A config that
// has not passed Validate is validated here.
func Restore(ctx context.Context, cfg RestoreConfig) error {
	_, err := RestoreWithReport(ctx, cfg)
	return err
}

// RestoreReport says what a restore did beyond etcd's restore.
type RestoreReport struct {
	// Alarms are the active alarms the snapshot held; AlarmsCleared says
	// whether the new member starts without them.
	Alarms        []Alarm `json:"alarms,omitempty"`
	AlarmsCleared bool    `json:"alarmsCleared,omitempty"`
}

// RestoreWithReport is Restore, and says what it did with the snapshot's
// alarms.
func RestoreWithReport(ctx context.Context, cfg RestoreConfig) (RestoreReport, error) {
	rep, err := restore(ctx, cfg)
	return rep, err
}

func restore(ctx context.Context, cfg RestoreConfig) (rep RestoreReport, err error) {
	if !cfg.validated {
		if err := cfg.Validate(); err != nil {
			return rep, err
		}
	}
	trailer, err := precheck(ctx, cfg)
	if err != nil {
		return rep, err
	}
	tmpData, tmpWAL, err := tempDirs(cfg)
	if err != nil {
		return rep, err
	}
	// Once renamed into place the temporary names are gone: then this
	// removes nothing.
	defer func() {
		for _, t := range []string{tmpData, tmpWAL} {
			if t != "" {
				os.RemoveAll(t)
			}
		}
	}()
	// etcd hashes its copy of the file unless told to skip: it is told to
	// only for a file without a trailer, which precheck let through only
	// with SkipHashCheck. A trailer that is there is always checked.
	if err := etcdRestore(cfg, tmpData, tmpWAL, !trailer); err != nil {
		return rep, err
	}
	if rep.Alarms, err = alarmsOf(filepath.Join(tmpData, "member", "snap", "db"), cfg.KeepAlarms); err != nil {
		return rep, err
	}
	rep.AlarmsCleared = len(rep.Alarms) > 0 && !cfg.KeepAlarms
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, publish(cfg, tmpData, tmpWAL)
}

// alarmsOf lists a restored db's alarms, clearing them unless keep.
func alarmsOf(db string, keep bool) ([]Alarm, error) {
	if !keep {
		return clearAlarms(db)
	}
	s, err := Open(db, OpenOptions{AllowNoTrailer: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Alarms()
}

// precheck opens the snapshot and reads all of it as etcd will: etcd's
// restore opens the file with bbolt, whose freelist rebuild panics on a
// corrupt page in a goroutine of its own (killing the process), and it
// copies a malformed KeyValue without a word, on which etcd then exits at
// boot. The trailer is not hashed here: etcd's restore hashes the file
// itself, so it is not hashed twice.
func precheck(ctx context.Context, cfg RestoreConfig) (trailer bool, err error) {
	s, err := Open(cfg.SnapshotPath, OpenOptions{AllowNoTrailer: cfg.SkipHashCheck, Hash: HashTrailerOnly})
	if err != nil {
		return false, err
	}
	err = s.Validate(ctx)
	if err == nil {
		err = cfg.checkIdentity(s)
	}
	s.Close()
	if err != nil {
		// A damaged file with a trailer: the trailer names the cause.
		if s.HasTrailer {
			if herr := recheckTrailer(cfg.SnapshotPath); errors.Is(herr, ErrInvalidInput) {
				return false, herr
			}
		}
		return false, err
	}
	return s.HasTrailer, ctx.Err()
}

// Identity is the identity etcd's restore gives the cluster this member
// belongs to (after Validate).
func (c *RestoreConfig) Identity() (ClusterIdentity, error) {
	return IdentityOf(c.InitialCluster, c.InitialClusterToken)
}

// checkIdentity refuses a restore whose members would carry a member ID of
// the cluster the snapshot was saved from: the old cluster's token with its
// peer URLs. Such a member is, to an old member still running, one of its
// own (see DeriveToken's comment).
func (c *RestoreConfig) checkIdentity(src *Snapshot) error {
	next, err := c.Identity()
	if err != nil {
		return option.Errorf("InitialCluster", "{}: %s", err)
	}
	old, err := src.OldIdentity(c.InitialClusterToken)
	if err != nil {
		return err
	}
	if shared := SharedMembers(old, next); len(shared) > 0 {
		return option.Errorf("InitialClusterToken", "{} %q is the old cluster's: member %s would get the old member ID %s, "+
			"so an old member still running would take it for its own; give another {} or none (a new one is derived)",
			c.InitialClusterToken, shared[0].Name, shared[0].ID)
	}
	return nil
}

// tempDirs names the temporary data and WAL directories beside the final
// ones (fsutil's temporary names: a dead run's are recognised). Neither
// exists on return: etcd wants to create them itself.
func tempDirs(cfg RestoreConfig) (tmpData, tmpWAL string, err error) {
	tmpData, err = fsutil.MkdirTemp(cfg.DataDir, "")
	if err != nil {
		return "", "", fmt.Errorf("restore: %w", err)
	}
	if err := os.Remove(tmpData); err != nil {
		return "", "", fmt.Errorf("restore: %w", err)
	}
	if cfg.WALDir != "" {
		tmpWAL = fsutil.TempName(cfg.WALDir, "")
	}
	return tmpData, tmpWAL, nil
}

// etcdRestore runs etcd's restore into the temporary directories.
func etcdRestore(cfg RestoreConfig, tmpData, tmpWAL string, skipHash bool) error {
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	err := etcdsnapshot.NewV3(lg).Restore(etcdsnapshot.RestoreConfig{
		SnapshotPath:        cfg.SnapshotPath,
		Name:                cfg.Name,
		OutputDataDir:       tmpData,
		OutputWALDir:        tmpWAL,
		PeerURLs:            cfg.PeerURLs,
		InitialCluster:      cfg.InitialCluster,
		InitialClusterToken: cfg.InitialClusterToken,
		SkipHashCheck:       skipHash,
		InitialMmapSize:     cfg.InitialMmapSize,
		RevisionBump:        cfg.RevisionBump,
		MarkCompacted:       cfg.MarkCompacted,
	})
	if err == nil {
		return nil
	}
	// etcd reports a trailer mismatch only in its error text: hash the file
	// again to tell a corrupt snapshot from any other failure.
	if !skipHash {
		if herr := recheckTrailer(cfg.SnapshotPath); errors.Is(herr, ErrInvalidInput) {
			return herr
		}
	}
	return fmt.Errorf("restore of member %q: %w", cfg.Name, err)
}

// recheckTrailer hashes the bbolt part of a snapshot file and compares it
// with its trailer: an InputError when they differ.
func recheckTrailer(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if !hasTrailer(st.Size()) {
		return nil
	}
	s := &Snapshot{Path: path, Size: st.Size(), DBSize: st.Size() - sha256.Size}
	return s.verifyTrailer(f, progress.Nop{})
}

// publish renames the restored directories into place, each fsynced
// whole before its rename and its parent after (an empty DataDir is
// replaced; Validate checked it is empty). A separate WAL dir goes first,
// holding a marker that names the data dir until the data dir follows: a
// run killed between the two renames leaves a WAL dir the next run (or
// `snapshift clean`) recognises as half published and removes. On failure
// the WAL dir already renamed is removed again. A parent that could not be
// fsynced after its rename is an fsutil.ErrNotDurable with both in place.
func publish(cfg RestoreConfig, tmpData, tmpWAL string) error {
	if tmpWAL == "" {
		return wrapRestore(fsutil.PublishDir(tmpData, cfg.DataDir))
	}
	marker, err := fsutil.MarkPending(tmpWAL, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	walErr := fsutil.PublishDir(tmpWAL, cfg.WALDir)
	if walErr != nil && !errors.Is(walErr, fsutil.ErrNotDurable) {
		return fmt.Errorf("restore: %w", walErr)
	}
	fsutil.FailpointBetweenRenames()
	dataErr := fsutil.PublishDir(tmpData, cfg.DataDir)
	if dataErr != nil && !errors.Is(dataErr, fsutil.ErrNotDurable) {
		os.RemoveAll(cfg.WALDir)
		return fmt.Errorf("restore: %w", dataErr)
	}
	if err := fsutil.ClearPending(filepath.Join(cfg.WALDir, filepath.Base(marker))); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return wrapRestore(errors.Join(walErr, dataErr))
}

func wrapRestore(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("restore: %w", err)
}

package transform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// ErrRefused is wrapped by errors that refuse a change the input or the
// flags make unsafe (a rule's refusal, an object that does not round-trip).
var ErrRefused = state.ErrRefused

// Config configures Run.
type Config struct {
	// Input snapshot path. Required.
	Input string
	// Output path. Required unless DryRun.
	Output string
	// Force replaces an existing Output.
	Force bool
	// DryRun does everything but write: the report says what would change.
	DryRun bool
	// SkipHashCheck accepts an input without a sha256 trailer.
	SkipHashCheck bool
	// Rules run in this order. None: an identity transform.
	Rules []Rule
	// Codec decodes claimed values. Default codec.New().
	Codec *codec.Codec
	// Progress receives phase events. Optional.
	Progress progress.Reporter
	// TxBytes is the writer's failpoint interval (snapshot.WriterConfig).
	// Default snapshot.DefaultTxBytes.
	TxBytes int64
	// Writer is how the output's (or the first member's) `key` bucket is
	// written: snapshot.WriterBulk (the default, "") or snapshot.WriterBbolt.
	Writer snapshot.WriterKind
	// Observers see every output value (e.g. the leftover scan). Optional.
	Observers []Observer
	// Encryption decrypts values encrypted at rest that a rule claims, and
	// re-encrypts changed ones. Optional: without it, an encrypted value a
	// rule claims is an error.
	Encryption *encryption.Config
	// EtcdPrefix is where the cluster keeps its objects (kube-apiserver's
	// --etcd-prefix). Default: detected from the snapshot. Rules see every
	// key under wellknown.DefaultPrefix whatever it is; keys outside it are
	// copied and never shown to a rule.
	EtcdPrefix string
	// KeepAlarms copies the input's active etcd alarms into the output.
	// Default: the output holds none, since etcd reloads them at boot and a
	// NOSPACE alarm would leave the restored member read-only.
	KeepAlarms bool
	// VerifyOutput checks the finished output under its temporary name
	// before it is published; an error means nothing is published.
	// etcdPrefix is where the output keeps the objects (the input's).
	VerifyOutput func(ctx context.Context, path, etcdPrefix string) error
	// Restore, instead of Output, restores the result straight into these
	// members' data dirs (a fused restore, snapshot.StartFused): the live
	// state is written anew into the first member's database, as a snapshot
	// would be (the input's history never reaches the member's disk), and
	// the other members get copies; no snapshot file is written. KeepAlarms
	// applies to every member; VerifyOutput checks the first member's
	// database (without a trailer). Default: none (write Output).
	Restore []snapshot.RestoreConfig
	// Route is how a fused restore writes the members' database: "" or
	// RouteRewrite, the only route. Requires Restore.
	Route string
}

// RouteRewrite is the fused restore's route (Config.Route, Report.Route).
// The copy route (a copy of the input's database, edited) was removed:
// rewriting was the faster in every measurement (docs/PERFORMANCE.md).
const RouteRewrite = "rewrite"

// routeCopy is the removed copy route, named only to refuse it.
const routeCopy = "copy"

// Validate checks the configuration before any work.
func (c *Config) Validate() error {
	if c.Input == "" {
		return errors.New("no input snapshot given")
	}
	switch {
	case len(c.Restore) > 0 && (c.Output != "" || c.DryRun):
		return option.Errorf("Restore", "{} writes data dirs: give no Output and no DryRun with it")
	case !c.DryRun && c.Output == "" && len(c.Restore) == 0:
		return option.Errorf("Output", "no output given ({}), and not a dry run")
	case c.Route == routeCopy:
		return option.Errorf("Route", "{} %q was removed: the fused restore writes the live state anew (%s), which was the faster on every size and profile", c.Route, RouteRewrite)
	case c.Route != "" && c.Route != RouteRewrite:
		return option.Errorf("Route", "{} is %q: the only route is %s", c.Route, RouteRewrite)
	}
	if _, err := snapshot.ParseWriterKind(string(c.Writer)); err != nil {
		return option.Errorf("Writer", "{} %q is neither %s nor %s", c.Writer, snapshot.WriterBulk, snapshot.WriterBbolt)
	}
	seen := map[string]bool{}
	for _, r := range c.Rules {
		if seen[r.Name()] {
			return fmt.Errorf("%w: rule %q given twice", ErrRefused, r.Name())
		}
		seen[r.Name()] = true
	}
	if c.Codec == nil {
		c.Codec = codec.New()
	}
	return nil
}

// pending is a change to write above the input's revisions. Its bytes wait
// in the spill file (none in a dry run).
type pending struct {
	key     string // as stored, under the input's prefix
	off     int64
	size    int
	created bool
	// Of a replaced key's input revision: kept, or counted on.
	createRev, version, lease int64
}

// Run performs one transform. On error nothing is left at Output.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := progress.OrNop(cfg.Progress)
	// Refuse an existing output before the long part.
	if err := cfg.checkOutputs(); err != nil {
		return nil, err
	}
	timer := newPhaseTimer()
	in, err := openInput(ctx, cfg, p, timer)
	defer in.close()
	if err != nil {
		return nil, err
	}
	snap, ix := in.snap, in.ix
	defer snap.Close()
	defer snap.WaitHash() // the hash reads the mapping: it ends before the mapping goes
	if err := state.CheckPrefix(ix, cfg.EtcdPrefix); err != nil {
		return nil, err
	}
	e := newEngine(ctx, cfg, snap, ix)
	e.timer = timer
	defer e.abort() // no-op after a successful commit
	// The rules' Prepare and the stream overlap the rest of the input's
	// hash on the other core. What the stream writes goes to temporary
	// names only, removed if the hash does not match: the hash is waited
	// for before anything is published or reported, and a bad input
	// explains any failure on the way.
	// The stream's end is reported once the hash has matched.
	err = e.beforeHash(ctx, in.fused)
	streamed := &heldDone{Reporter: p}
	if err == nil {
		if cfg.DryRun {
			if e.startObservers() {
				defer e.pump.wait() // before snap.Close: the observers read its mapping
			}
			err = e.stream(ctx, streamed)
		} else {
			err = e.writeStream(ctx, streamed)
		}
	}
	if herr := in.confirm(); herr != nil {
		return nil, herr
	}
	if err != nil {
		return nil, err
	}
	streamed.release()
	e.report.Input.SHA256 = snap.SHA256         // known once the hash is confirmed
	e.report.Dropped = ix.Entries - ix.LiveKeys // old revisions, tombstones, bump markers
	if err := ctx.Err(); err != nil {
		return nil, err // an interrupted plan is not a plan
	}
	if cfg.DryRun {
		e.report.Timing = timer.timing()
		return e.report, nil
	}
	// The input's index is no longer needed: let it go before the output
	// is checked (which builds an index of its own).
	e.index, ix, in.ix = nil, nil, nil
	timer.enter(PhaseGC)
	runtime.GC() // so the output's check reuses that memory instead of adding to it
	// The commit's own steps (write, check, fsync, publish) are timed by
	// the writer; what is left of it counts as writing.
	timer.enter(PhaseWrite)
	if err := e.commit(ctx); err != nil {
		return nil, err
	}
	e.report.Timing = timer.timing()
	return e.report, nil
}

// writeStream starts the output (under temporary names) and streams the
// input into it.
func (e *engine) writeStream(ctx context.Context, p progress.Reporter) error {
	if len(e.cfg.Restore) == 0 {
		if err := e.startOutput(ctx); err != nil {
			return err
		}
	}
	if e.startObservers() {
		defer e.pump.wait() // the observers read the input's mapping
	}
	return e.stream(ctx, p)
}

// input is the opened, indexed input, and the fused restore started on it.
type input struct {
	snap  *snapshot.Snapshot
	ix    *snapshot.Index
	fused *snapshot.FusedRestore
	// confirm waits for the input's hash (which the index pass does not
	// wait for) and then reports the index phase done.
	confirm func() error
}

// beforeHash is the work that reads the input before its hash has been
// confirmed: the alarms, the fused restore's member database started, the
// rules' Prepare.
func (e *engine) beforeHash(ctx context.Context, fused *snapshot.FusedRestore) error {
	var err error
	if e.report.Alarms, err = e.snap.Alarms(); err != nil {
		return err
	}
	e.report.AlarmsCleared = len(e.report.Alarms) > 0 && !e.cfg.KeepAlarms
	if fused != nil {
		if err := e.useFused(ctx, fused); err != nil {
			return err
		}
	}
	return e.prepare(ctx)
}

// openInput opens and indexes the input, and starts the fused restore;
// close removes what a failed run left.
func openInput(ctx context.Context, cfg Config, p progress.Reporter, timer *phaseTimer) (*input, error) {
	in := &input{}
	startFused := func(s *snapshot.Snapshot) (err error) {
		if len(cfg.Restore) > 0 {
			timer.enter(PhaseBootstrap)
			in.fused, err = snapshot.StartFused(ctx, s, cfg.Restore)
		}
		return err
	}
	var err error
	in.snap, in.ix, in.confirm, err = openIndexed(ctx, cfg, p, timer, startFused)
	return in, err
}

// close aborts an unfinished fused restore (a no-op after its Commit).
func (in *input) close() {
	if in.fused != nil {
		in.fused.Abort()
	}
}

// startObservers starts the observer pump, if there are observers.
func (e *engine) startObservers() bool {
	if len(e.cfg.Observers) == 0 {
		return false
	}
	for _, o := range e.cfg.Observers {
		if pa, ok := o.(PrefixAware); ok {
			pa.SetEtcdPrefix(e.prefix)
		}
	}
	e.pump = newObserverPump(e.cfg.Observers)
	return true
}

// commit finishes the output: the snapshot file, or the members' data dirs.
func (e *engine) commit(ctx context.Context) error {
	if e.fused != nil {
		if err := e.fused.Commit(ctx); err != nil {
			return err
		}
		for _, m := range e.fused.Members() {
			e.report.Restored = append(e.report.Restored, RestoredMember{Name: m.Name, DataDir: m.DataDir, WALDir: m.WALDir})
		}
		return nil
	}
	res, err := e.w.Commit()
	if err != nil {
		return err
	}
	e.report.Output = res
	return nil
}

// checkOutputs refuses an output that exists, or a data dir that is not
// new or empty, before any work.
func (c *Config) checkOutputs() error {
	if len(c.Restore) > 0 {
		members := make([]snapshot.RestoreConfig, len(c.Restore))
		for i, m := range c.Restore {
			m.SnapshotPath, m.KeepAlarms = c.Input, c.KeepAlarms
			if err := m.Validate(); err != nil {
				return err
			}
			members[i] = m
		}
		c.Restore = members
		return nil
	}
	if c.DryRun {
		return nil
	}
	return checkOutput(c.Output, c.Force, c.Input)
}

// abort removes every unfinished output.
func (e *engine) abort() {
	if e.w != nil {
		e.w.Abort()
	}
	if e.fused != nil {
		e.fused.Abort()
	}
	e.spill.close()
}

// useFused makes the engine write into a fused restore; the input has
// been read whole (the index).
func (e *engine) useFused(ctx context.Context, f *snapshot.FusedRestore) error {
	if e.cfg.VerifyOutput != nil {
		f.BeforePublish = func(db string) error { return e.cfg.VerifyOutput(ctx, db, e.prefix) }
	}
	e.timer.enter(PhaseBootstrap)
	f.Timing, f.Writer = e.timer.add, e.cfg.Writer
	e.fused, e.out = f, f
	e.report.Route = RouteRewrite
	w, err := f.Rewrite(e.snap.DBSize)
	if err != nil {
		return err
	}
	e.w = w // every live entry is written, as transform writes them
	return nil
}

// openIndexed opens the input and indexes it. The trailer is checked on
// the other core while the index is built and after it: confirm waits for
// it; nothing is decided on the input before the hash has matched.
func openIndexed(ctx context.Context, cfg Config, p progress.Reporter, timer *phaseTimer, opened func(*snapshot.Snapshot) error) (*snapshot.Snapshot, *snapshot.Index, func() error, error) {
	timer.enter(PhaseOpen)
	snap, err := snapshot.Open(cfg.Input, snapshot.OpenOptions{AllowNoTrailer: cfg.SkipHashCheck, Hash: snapshot.HashInBackground, Progress: p})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := opened(snap); err != nil {
		snap.WaitHash()
		snap.Close()
		return nil, nil, nil, err
	}
	var named, counted []string
	for _, r := range cfg.Rules {
		// A detected custom prefix is not known yet: its lists walk, its
		// counts too.
		if l, ok := r.(Lister); ok {
			for _, p := range l.Lists() {
				named = append(named, state.Stored(state.NormalizePrefix(cfg.EtcdPrefix), p))
			}
		}
		if c, ok := r.(Counter); ok {
			for _, p := range c.Counts() {
				if s := state.Stored(state.NormalizePrefix(cfg.EtcdPrefix), p); !slices.Contains(counted, s) {
					counted = append(counted, s)
				}
			}
		}
	}
	gate := &heldDone{Reporter: p}
	timer.enter(PhaseIndex)
	ix, err := snap.IndexWith(ctx, gate, snapshot.IndexOptions{Named: named, Counted: counted})
	if err != nil {
		timer.enter(PhaseHashWait)
		herr := snap.WaitHash()
		snap.Close()
		if herr != nil {
			return nil, nil, nil, herr // the input is bad: that explains the index's failure
		}
		return nil, nil, nil, err
	}
	confirm := func() error {
		timer.enter(PhaseHashWait)
		if err := snap.WaitHash(); err != nil {
			return err // the index phase is not reported done: the input is bad
		}
		gate.release()
		return nil
	}
	return snap, ix, confirm, nil
}

func newEngine(ctx context.Context, cfg Config, snap *snapshot.Snapshot, ix *snapshot.Index) *engine {
	prefix := state.ResolvePrefix(ix, cfg.EtcdPrefix)
	e := &engine{ctx: ctx, cfg: cfg, snap: snap, index: ix, prefix: prefix, router: newRouter(cfg.Rules, prefix)}
	// The changed objects' list spills beside the output, under a name the
	// next run knows as a leftover (a dry run, which creates nothing there:
	// in the temporary directory).
	beside := filepath.Join(os.TempDir(), "snapshift-objects")
	switch {
	case cfg.DryRun:
	case cfg.Output != "":
		beside = cfg.Output
	case len(cfg.Restore) > 0:
		beside = cfg.Restore[0].DataDir
	}
	e.report = &Report{
		Objects: &ObjectChanges{beside: beside, spillAt: defaultSpillAt},
		DryRun:  cfg.DryRun,
		Input: InputSummary{Path: cfg.Input, Size: snap.Size, // SHA256 once the hash is confirmed
			CurrentRevision: ix.CurrentRevision, Entries: ix.Entries, LiveKeys: ix.LiveKeys, EtcdPrefix: prefix},
	}
	for _, r := range cfg.Rules {
		e.ruleReports = append(e.ruleReports, &RuleReport{Name: r.Name()})
	}
	e.report.Rules = e.ruleReports
	return e
}

// prepare runs every rule's Prepare over a view of the input, in order.
func (e *engine) prepare(ctx context.Context) error {
	e.timer.enter(PhasePrepare)
	view := state.NewView(e.snap, e.index, e.cfg.Codec, e.cfg.Encryption, e.prefix)
	for _, r := range e.cfg.Rules {
		if pr, ok := r.(Preparer); ok {
			if err := pr.Prepare(ctx, view); err != nil {
				return fmt.Errorf("rule %s: %w", r.Name(), err)
			}
		}
	}
	return nil
}

// startOutput creates the output under its temporary name and copies the
// buckets other than key into it.
func (e *engine) startOutput(ctx context.Context) error {
	cfg := e.cfg
	e.timer.enter(PhaseWrite)
	wc := snapshot.WriterConfig{Path: cfg.Output, Force: cfg.Force, TxBytes: cfg.TxBytes, SizeHint: e.snap.DBSize, Timing: e.timer.add, Writer: cfg.Writer}
	if cfg.VerifyOutput != nil {
		wc.BeforePublish = func(tmp string) error { return cfg.VerifyOutput(ctx, tmp, e.prefix) }
	}
	w, err := snapshot.Create(wc)
	if err != nil {
		return err
	}
	e.w, e.out = w, w
	if cfg.KeepAlarms {
		return e.w.CopyBuckets(e.snap)
	}
	return e.w.CopyBuckets(e.snap, snapshot.AlarmBucket)
}

// stream passes every live key through the rules, then creates what the
// rules finish with and writes the changed objects above the input's
// revisions.
func (e *engine) stream(ctx context.Context, p progress.Reporter) error {
	e.timer.enter(PhaseStream)
	if err := e.snap.Live(ctx, e.index, "transform", p, e.entry); err != nil {
		return err
	}
	for i, r := range e.cfg.Rules {
		if f, ok := r.(Finisher); ok {
			objs, err := f.Finish(ctx)
			if err != nil {
				return fmt.Errorf("rule %s: %w", r.Name(), err)
			}
			for _, o := range objs {
				if err := e.create(i, o); err != nil {
					return err
				}
			}
		}
	}
	if err := e.checkCreates(); err != nil {
		return err
	}
	if err := e.writePending(); err != nil {
		return err
	}
	if e.pump != nil {
		e.timer.enter(PhaseScanWait)
		e.pump.wait() // every value observed: the observers' reports are complete
	}
	for i, r := range e.cfg.Rules {
		if n, ok := r.(Noter); ok {
			e.ruleReports[i].Notes = n.Notes()
		}
	}
	return nil
}

func checkOutput(out string, force bool, in string) error {
	if out == in {
		return fmt.Errorf("%w: output %s is the input: write the new snapshot to another file", ErrRefused, out)
	}
	// Before the work: a directory there fails only at the final rename.
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return option.Errorf("Output", "{} %s is a directory: give the new snapshot's file name", out)
	}
	return fsutil.CheckNew(out, force)
}

type engine struct {
	ctx         context.Context
	cfg         Config
	snap        *snapshot.Snapshot
	index       *snapshot.Index
	router      *router
	prefix      string                 // where the input keeps the objects; rules see wellknown.DefaultPrefix
	w           *snapshot.Writer       // the new snapshot file, or
	fused       *snapshot.FusedRestore // the members' data dirs
	out         output                 // whichever of the two; nil in a dry run
	report      *Report
	ruleReports []*RuleReport
	pending     []pending
	dryPending  int           // a dry run counts its changes instead (8.5 MB of pending at 134k)
	spill       *spill        // the bytes of pending, once there is one
	pump        *observerPump // nil without observers
	timer       *phaseTimer
	createdKeys map[string]bool
	names       []string // scratch for entry
}

// entry handles one live key of the stream.
func (e *engine) entry(ent *snapshot.Entry) error {
	rules := e.router.match(ent.KV.Key)
	if len(rules) == 0 {
		return e.keep(ent)
	}
	stored := e.index.Intern(string(ent.KV.Key)) // the report keeps it: one copy with the index's
	key, _ := state.Canonical(e.prefix, stored)  // the router claims only keys under the prefix
	plain, info, err := state.Decrypt(e.cfg.Encryption, stored, ent.KV.Value)
	if err != nil {
		if errors.Is(err, state.ErrEncrypted) && e.tolerated(rules, key, err) {
			return e.keep(ent) // copied as stored
		}
		return err
	}
	val, err := e.cfg.Codec.Decode(plain)
	if err != nil {
		return state.DecodeError(e.cfg.Input, stored, ent.Rev, err)
	}
	obj := &state.Object{Key: key, Revision: ent.Rev, Meta: ent.KV, Value: val, Encryption: info}
	var (
		changed bool
		names   = e.names[:0]
		changes []Change
	)
	for _, ri := range rules {
		r := e.cfg.Rules[ri]
		rr := e.ruleReports[ri]
		rr.Seen++
		res, err := r.Apply(e.ctx, obj)
		if err != nil {
			return fmt.Errorf("rule %s: %s: %w", r.Name(), key, err)
		}
		for _, c := range res.Create {
			if err := e.create(ri, c); err != nil {
				return err
			}
		}
		switch res.Action {
		case Delete:
			rr.Deleted++
			e.report.Deleted++
			return e.report.Objects.Add(ObjectChange{Key: stored, Action: "delete",
				Rules: append(names, r.Name()), Changes: joinChanges(changes, res.Changes)})
		case Replace:
			rr.Changed++
			changed = true
			names = append(names, r.Name())
			changes = joinChanges(changes, res.Changes)
		}
	}
	e.names = names
	if !changed {
		return e.keep(ent)
	}
	// Before trusting the edit: the stored bytes must round-trip exactly, or
	// this build would silently drop fields it does not know.
	if err := e.cfg.Codec.CheckRoundTrip(plain); err != nil {
		return fmt.Errorf("%w: %s (revision %s): %w", ErrRefused, stored, snapshot.RevisionString(ent.Rev), err)
	}
	b, err := e.cfg.Codec.Encode(obj.Value)
	if err != nil {
		return fmt.Errorf("%s: encoding the changed object: %w", stored, err)
	}
	e.report.Replaced++
	e.observe(ent.KV.Key, b, true)
	if bytes.Equal(b, plain) {
		// The rules replaced it with the same bytes: the stored value (its
		// ciphertext, if encrypted) is kept as it is.
		b = ent.KV.Value
	} else if b, err = e.encrypt(stored, b, info); err != nil {
		return err
	}
	if err := e.report.Objects.Add(ObjectChange{Key: stored, Action: "replace", Rules: names, Changes: changes}); err != nil {
		return err
	}
	return e.addPending(pending{key: stored, createRev: ent.KV.CreateRevision, version: ent.KV.Version, lease: ent.KV.Lease}, b)
}

// joinChanges appends a rule's changes to an object's. The first rule's
// slice is taken as it is, not copied (2 MB on a large run): clipped, so a
// second rule's append copies it instead of writing into the rule's array.
func joinChanges(changes, more []Change) []Change {
	if len(more) == 0 {
		return changes
	}
	if changes == nil {
		return slices.Clip(more)
	}
	return append(changes, more...)
}

// keep writes an entry as it is stored: no rule claims it, the rules that
// do keep it, or they tolerate not reading it.
func (e *engine) keep(ent *snapshot.Entry) error {
	e.report.Copied++
	e.observe(ent.KV.Key, ent.KV.Value, false)
	return e.put(ent.RevKey, ent.Raw)
}

// encrypt stores a changed or created value as info says, bound to its key.
func (e *engine) encrypt(key string, plain []byte, info encryption.Info) ([]byte, error) {
	if info.Provider == "" || info.Provider == encryption.ProviderIdentity {
		return plain, nil
	}
	if e.cfg.Encryption == nil {
		return nil, fmt.Errorf("%w: %w", state.ErrEncrypted, option.Errorf("Encryption", "%s must be stored %s, but no {} was given", key, info))
	}
	out, err := e.cfg.Encryption.Encrypt(key, plain, info)
	if err != nil {
		return nil, fmt.Errorf("%s: re-encrypting with %s: %w", key, info, err)
	}
	return out, nil
}

// observe hands a value to the observers, under its canonical key.
func (e *engine) observe(stored, value []byte, changed bool) {
	if e.pump == nil {
		return
	}
	key := stored
	if e.prefix != wellknown.DefaultPrefix {
		if c, ok := state.Canonical(e.prefix, string(stored)); ok {
			key = []byte(c)
		}
	}
	e.pump.observe(key, value, changed)
}

// output receives the key bucket's entries and the compaction revision.
type output interface {
	Put(revKey, raw []byte) error
	SetCompacted(rev int64) error
}

// put writes an unchanged live entry (nothing in a dry run).
func (e *engine) put(revKey, raw []byte) error {
	if e.w == nil {
		return nil
	}
	return e.w.Put(revKey, raw)
}

// create queues a new key.
func (e *engine) create(ri int, o NewObject) error {
	name := e.cfg.Rules[ri].Name()
	if e.createdKeys == nil {
		e.createdKeys = map[string]bool{}
	}
	stored := state.Stored(e.prefix, o.Key)
	if e.createdKeys[stored] {
		return fmt.Errorf("rule %s: key %s is created twice", name, stored)
	}
	e.createdKeys[stored] = true
	b, err := e.cfg.Codec.Encode(o.Value)
	if err != nil {
		return fmt.Errorf("rule %s: encoding new object %s: %w", name, o.Key, err)
	}
	e.ruleReports[ri].Created++
	e.report.Created++
	e.observe([]byte(stored), b, true)
	info := encryption.Info{Provider: encryption.ProviderIdentity}
	if o.Encryption != nil {
		info = *o.Encryption
	} else if e.cfg.Encryption != nil {
		gr, _ := meta.UnsafeGuessKindToResource(o.Value.GVK)
		info = e.cfg.Encryption.WriteInfo(gr.Group, gr.Resource)
	}
	if b, err = e.encrypt(stored, b, info); err != nil {
		return err
	}
	if err := e.report.Objects.Add(ObjectChange{Key: stored, Action: "create", Rules: []string{name}, Changes: o.Changes}); err != nil {
		return err
	}
	return e.addPending(pending{key: stored, created: true}, b)
}

// checkCreates refuses to create a key that stays live in the output. The
// deleted keys are read from the report (a set of them held through the
// stream was 3.6 MB at 65k deletes), and only when a created key is live.
func (e *engine) checkCreates() error {
	live := map[string]bool{}
	for k := range e.createdKeys {
		if _, ok := e.index.Lookup([]byte(k)); ok {
			live[k] = true
		}
	}
	if len(live) == 0 {
		return nil
	}
	err := e.report.Objects.Each(func(o ObjectChange) error {
		if o.Action == Delete.String() && live[o.Key] {
			live[o.Key] = false
		}
		return nil
	})
	if err != nil {
		return err
	}
	var clash []string
	for k, stays := range live {
		if stays {
			clash = append(clash, k)
		}
	}
	if len(clash) > 0 {
		sort.Strings(clash)
		return fmt.Errorf("%w: the rules would create keys that already exist and are not removed: %s", ErrRefused, strings.Join(clash, ", "))
	}
	return nil
}

// addPending queues a change; its bytes go to the spill file, created
// beside the output at the first change (a dry run keeps none, and only
// counts it).
func (e *engine) addPending(p pending, value []byte) error {
	if e.out == nil {
		e.dryPending++
		return nil
	}
	if e.spill == nil {
		beside := e.cfg.Output
		if len(e.cfg.Restore) > 0 {
			beside = e.cfg.Restore[0].DataDir
		}
		sp, err := newSpill(beside)
		if err != nil {
			return err
		}
		e.spill = sp
	}
	off, err := e.spill.add(value)
	if err != nil {
		return err
	}
	p.off, p.size = off, len(value)
	e.pending = append(e.pending, p)
	return nil
}

// writePending appends every replaced or created object at one new main
// revision above the input's current revision, and sets the compaction
// markers above everything written. A deleted key is simply not written.
func (e *engine) writePending() error {
	current := e.index.CurrentRevision
	top := current
	if len(e.pending) > 0 || e.dryPending > 0 || e.report.Deleted > 0 {
		top = current + 1
		e.report.NewRevision = top
	}
	e.report.CompactRevision = top + 1
	if e.out == nil {
		e.pending = nil
		return nil // a dry run: nothing to write
	}
	sub := int64(0)
	for _, p := range e.pending {
		value, err := e.spill.read(p.off, p.size)
		if err != nil {
			return err
		}
		rev := snapshot.Revision{Main: top, Sub: sub}
		sub++
		kv := snapshot.KV{Key: []byte(p.key), Value: value, ModRevision: rev.Main}
		if p.created {
			kv.CreateRevision, kv.Version = rev.Main, 1
		} else {
			kv.CreateRevision, kv.Version, kv.Lease = p.createRev, p.version+1, p.lease
		}
		raw, err := kv.Marshal()
		if err != nil {
			return fmt.Errorf("%s: %w", p.key, err)
		}
		if err := e.out.Put(snapshot.RevisionKey(rev), raw); err != nil {
			return err
		}
	}
	e.pending = nil
	return e.out.SetCompacted(top + 1)
}

// router maps a key to the rules that claim it, in rule order.
type router struct {
	prefixes []routePrefix
}

type routePrefix struct {
	prefix string
	rule   int
}

// newRouter routes stored keys: the rules' canonical prefixes are
// translated to where the input keeps the objects.
func newRouter(rules []Rule, stored string) *router {
	r := &router{}
	for i, rule := range rules {
		for _, p := range rule.Prefixes() {
			r.prefixes = append(r.prefixes, routePrefix{prefix: state.Stored(stored, p), rule: i})
		}
	}
	return r
}

// match returns the indexes of the rules claiming key, each once, in order.
func (r *router) match(key []byte) []int {
	var out []int
	for _, p := range r.prefixes {
		if len(key) >= len(p.prefix) && string(key[:len(p.prefix)]) == p.prefix {
			if len(out) == 0 || out[len(out)-1] != p.rule {
				out = append(out, p.rule)
			}
		}
	}
	return out
}

// tolerated asks the rules that claim key whether they can do without its
// value, which cannot be decrypted: all of them must say yes.
func (e *engine) tolerated(rules []int, key string, err error) bool {
	for _, ri := range rules {
		t, ok := e.cfg.Rules[ri].(Tolerant)
		if !ok || !t.Unreadable(key, err) {
			return false
		}
		e.ruleReports[ri].Seen++
	}
	return true
}

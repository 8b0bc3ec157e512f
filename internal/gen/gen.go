package gen

import (
	"container/heap"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/lease/leasepb"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/snapshot"
)

// Version identifies what Generate writes for a given Config. It changes whenever the output of
// the same Config changes, so that caches of generated files can tell they are stale.
const Version = "2" // 2: the `key` bucket laid out by snapshot's bulk loader

// DefaultTxBytes is the writer's snapshot.WriterConfig.TxBytes: how often, in bytes of pages
// written, the writer passes the crash suite's failpoint (it no longer bounds a transaction).
const DefaultTxBytes = 32 << 20

// MinKeys is the smallest Config.Keys: the sample cluster plus a little bulk.
const MinKeys = 500

// Size is a named size for benchmarks.
type Size struct {
	Name string
	Keys int
}

// Sizes are the named sizes, smallest first. Bytes are what the default seed gives, roughly.
var Sizes = []Size{
	{"small", 10_000},      // ~30 MiB
	{"medium", 200_000},    // ~0.5 GiB
	{"large", 650_000},     // ~1.8 GiB
	{"xlarge", 1_100_000},  // ~3.2 GiB: beyond etcd's default 2 GiB quota, as clusters with a raised quota are
	{"xxlarge", 3_230_000}, // ~8.0 GiB: etcd's suggested maximum quota (cached outside the clone, see internal/bench)
}

// SizeKeys returns the key count of a named size.
func SizeKeys(name string) (int, error) {
	var names []string
	for _, s := range Sizes {
		if s.Name == name {
			return s.Keys, nil
		}
		names = append(names, s.Name)
	}
	return 0, fmt.Errorf("unknown size %q (sizes: %v)", name, names)
}

// Config configures Generate.
type Config struct {
	// Path is the snapshot file to write. Required; its directory must exist. It is written under
	// a temporary name beside it and renamed when complete.
	Path string
	// Keys is the number of distinct etcd keys to create, the sample cluster's included. About
	// 10% of them get 2-4 revisions and about 1% end in a tombstone. At least MinKeys.
	Keys int
	// Seed selects the content: the same Config writes the same bytes.
	Seed int64
	// Force replaces an existing Path. Default false: an existing Path is an error.
	Force bool
	// TxBytes is the writer's snapshot.WriterConfig.TxBytes. Default DefaultTxBytes.
	TxBytes int64
	// Workers is the number of goroutines encoding values. Default GOMAXPROCS.
	Workers int
	// Progress, if set, is called from time to time with the number of `key` entries written.
	Progress func(entries int)
	// Profile is the history the cluster has: ProfileBasic (the default), ProfileChurn or
	// ProfileServices.
	Profile string
	// WorkerNodes is the number of worker Nodes besides the sample's (a fleet of that size, for
	// the playbooks rendered from it). Default: one per thousand keys, at least 2. At most 10,000.
	WorkerNodes int
}

// Result describes a generated snapshot.
type Result struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Keys is the number of distinct keys created; LiveKeys those not deleted.
	Keys     int `json:"keys"`
	LiveKeys int `json:"liveKeys"`
	// Entries is the number of `key` bucket entries (every revision and tombstone).
	Entries    int `json:"entries"`
	Tombstones int `json:"tombstones"`
	// Revision is the last main revision; CompactRevision the compaction markers'.
	Revision        int64 `json:"revision"`
	CompactRevision int64 `json:"compactRevision"`
	Namespaces      int   `json:"namespaces"`
	Nodes           int   `json:"nodes"`
	Pods            int   `json:"pods"`
	Services        int   `json:"services"`
	// Version is the generator's Version; Profile the Config's.
	Version  string        `json:"version"`
	Profile  string        `json:"profile,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Path == "":
		return errors.New("gen: no output path")
	case c.Keys < MinKeys:
		return fmt.Errorf("gen: Keys %d is below the minimum %d", c.Keys, MinKeys)
	case c.Keys > 10_000_000:
		return fmt.Errorf("gen: Keys %d is above the maximum 10000000", c.Keys)
	}
	if c.WorkerNodes < 0 || c.WorkerNodes > 10_000 {
		return fmt.Errorf("gen: %d worker Nodes is outside 0..10000", c.WorkerNodes)
	}
	if c.TxBytes <= 0 {
		c.TxBytes = DefaultTxBytes
	}
	if c.Profile == "" {
		c.Profile = ProfileBasic
	}
	if !slices.Contains(Profiles, c.Profile) {
		return fmt.Errorf("gen: unknown profile %q (profiles: %v)", c.Profile, Profiles)
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	return nil
}

// Generate writes a snapshot file as described in the package documentation.
func Generate(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w, err := newWorld(cfg.Seed, int64(cfg.Keys), cfg.WorkerNodes, codec.New())
	if err != nil {
		return nil, err
	}
	w.largePods = cfg.Profile == ProfileServices
	bw, err := createWriter(cfg)
	if err != nil {
		return nil, err
	}
	defer bw.Abort() // no-op after Commit

	p := newPipeline(w, bw, cfg.Workers, cfg.Progress)
	s := &sequencer{w: w, cfg: cfg, out: p, rev: 2, res: &Result{Path: cfg.Path, Version: Version, Profile: cfg.Profile},
		churn: cfg.Profile == ProfileChurn, services: cfg.Profile == ProfileServices, deleted: map[int64]bool{}}
	seqErr := s.run(ctx)
	if err := p.close(); err != nil {
		return nil, err
	}
	if seqErr != nil {
		return nil, seqErr
	}
	if err := s.writeBuckets(bw); err != nil {
		return nil, err
	}
	out, err := bw.Commit()
	if err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	res := s.res
	res.Size, res.SHA256, res.Duration = out.Size, out.SHA256, time.Since(start)
	return res, nil
}

// createWriter starts the output with every bucket etcd creates, in etcd's
// order, all in the first transaction.
func createWriter(cfg Config) (*snapshot.Writer, error) {
	bw, err := snapshot.Create(snapshot.WriterConfig{Path: cfg.Path, Force: cfg.Force, TxBytes: cfg.TxBytes, SizeHint: int64(cfg.Keys) * 3200})
	if err != nil {
		return nil, err
	}
	for _, b := range schema.AllBuckets {
		if err := bw.CreateBuckets(b.Name()); err != nil {
			bw.Abort()
			return nil, err
		}
	}
	return bw, nil
}

// ---------------------------------------------------------------------------------------------
// Sequencer: decides, in revision order, what each revision writes.

type sequencer struct {
	w   *world
	cfg Config
	out *pipeline
	res *Result

	rev     int64 // next main revision
	keys    int   // distinct keys created
	step    int64 // bulk objects created (the clock of scheduled updates)
	pending eventQueue
	qseq    int64

	svcUsed    [1 << 16]bool // offsets in the old service range taken
	svcNext    int
	svcIPs     []netip.Addr
	podOrdinal []int32 // per node: Pods placed so far
	events     int
	leaseIDs   []int64
	rangeRev   int64 // create revision of the sample's service-IP RangeAllocation
	eventLease int64
	live       int // keys whose newest revision is not a tombstone

	churn      bool           // ProfileChurn
	services   bool           // ProfileServices
	lastEvents []job          // churn: the Events created last
	deleted    map[int64]bool // churn: Events (by index) given a tombstone
}

var svcPrefix = netip.MustParsePrefix(sample.ServiceCIDR)

// emit sends one job at the next revision and returns that revision.
func (s *sequencer) emit(j job) int64 {
	j.rev = s.rev
	s.rev++
	switch {
	case j.recreate:
		j.create, j.version = j.rev, 1
		s.live++
	case j.variant == 0 && !j.tomb:
		j.create, j.version = j.rev, 1
		s.keys++
		s.live++
	}
	s.res.Entries++
	if j.tomb {
		s.res.Tombstones++
		s.live--
		if s.churn && j.kind == kEvent {
			s.deleted[j.idx] = true
		}
	}
	s.out.add(j)
	return j.rev
}

func (s *sequencer) leaseID(n int) int64 {
	return int64(mix(uint64(s.cfg.Seed)^0x1ea5e^uint64(n))>>2) | 1<<60
}

func (s *sequencer) run(ctx context.Context) error {
	if err := s.emitSample(); err != nil {
		return err
	}
	s.emitClusterObjects()
	// 4. Bulk objects, with their later updates and deletes interleaved.
	for idx := int64(0); s.keys < s.cfg.Keys; idx++ {
		if idx&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.out.failed(); err != nil {
				return err
			}
		}
		s.step = idx
		s.due(idx)
		s.bulk(idx)
	}
	s.due(1 << 62)
	if err := s.emitBitmap(); err != nil {
		return err
	}
	s.res.Keys = s.keys
	s.res.LiveKeys = s.live
	s.res.Revision = s.rev - 1
	return nil
}

// emitSample emits 1. the sample cluster, as internal/sample creates it
// (its Events on one lease), and 2. two rounds of kube-apiserver's
// compactor: compacted at the first round's revision.
func (s *sequencer) emitSample() error {
	objs, err := sample.Objects()
	if err != nil {
		return err
	}
	sampleLease := s.leaseID(0)
	s.leaseIDs = append(s.leaseIDs, sampleLease)
	for _, e := range objs {
		j := job{kind: kRaw, key: e.Key, raw: e.Value}
		if e.LeaseTTL > 0 {
			j.lease = sampleLease
		}
		rev := s.emit(j)
		if e.Key == sample.ServiceIPRangeKey {
			s.rangeRev = rev
		}
	}
	for _, svc := range sample.Services() {
		for _, ip := range svc.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil && svcPrefix.Contains(a) {
				s.takeServiceIP(a)
			}
		}
	}
	if s.rangeRev == 0 {
		return errors.New("gen: the sample has no service-IP RangeAllocation")
	}

	r1 := s.emit(job{kind: kRaw, key: sample.CompactRevKey, raw: []byte("0")})
	s.emit(job{kind: kRaw, key: sample.CompactRevKey, raw: []byte(strconv.FormatInt(r1, 10)), variant: 1, create: r1, version: 2})
	s.res.CompactRevision = r1
	return nil
}

// emitClusterObjects emits 3. the CustomResourceDefinitions, Namespaces
// and Nodes.
func (s *sequencer) emitClusterObjects() {
	for i := range crds {
		s.emit(job{kind: kCRD, sub: uint8(i)})
	}
	for i := range s.w.namespaces {
		for _, k := range []kind{kNamespace, kDefaultSA, kRootCA} {
			s.emit(job{kind: k, ns: int32(i), idx: int64(i)})
		}
	}
	s.res.Namespaces = len(s.w.namespaces)
	s.podOrdinal = make([]int32, len(s.w.nodes))
	for i, n := range s.w.nodes {
		if n.sample {
			continue
		}
		for _, k := range []kind{kNode, kNodeLease} {
			j := job{kind: k, node: int32(i), idx: int64(i)}
			j.create = s.emit(j)
			j.version = 1
			s.history(j, newRNG(s.cfg.Seed, 11, uint64(i), uint64(k)), 300, false)
		}
	}
	s.res.Nodes = len(s.w.nodes)
}

// emitBitmap emits 5. the allocator's bitmap, last written when the last
// Service was created (and, churning, the last Events' deletes).
func (s *sequencer) emitBitmap() error {
	data, err := sample.ServiceIPBitmap(svcPrefix, s.svcIPs)
	if err != nil {
		return err
	}
	raw, err := s.w.codec.EncodeProtobuf(&corev1.RangeAllocation{TypeMeta: typeMeta(gvRange), Range: sample.ServiceCIDR, Data: data}, gvRange)
	if err != nil {
		return err
	}
	s.emit(job{kind: kRaw, key: sample.ServiceIPRangeKey, raw: raw, variant: 1, create: s.rangeRev, version: 2})
	if s.churn {
		s.deleteLastEvents() // the newest revisions are deletes
	}
	return nil
}

func (s *sequencer) takeServiceIP(a netip.Addr) {
	b := a.As4()
	off := int(b[2])<<8 | int(b[3])
	if !s.svcUsed[off] {
		s.svcUsed[off] = true
		s.svcIPs = append(s.svcIPs, a)
	}
}

// nextServiceIP allocates the lowest free address of the old service range.
func (s *sequencer) nextServiceIP() (netip.Addr, bool) {
	if s.svcNext == 0 {
		s.svcNext = 1
	}
	for ; s.svcNext < 1<<16-1; s.svcNext++ {
		if !s.svcUsed[s.svcNext] {
			b := svcPrefix.Addr().As4()
			b[2], b[3] = byte(s.svcNext>>8), byte(s.svcNext)
			a := netip.AddrFrom4(b)
			s.takeServiceIP(a)
			return a, true
		}
	}
	return netip.Addr{}, false
}

// podIP places a Pod on node n: the next address of its range after the gateway, wrapping.
func (s *sequencer) podIP(n int32) netip.Addr {
	p := s.w.nodes[n].cidr
	size := 1 << (32 - p.Bits())
	ord := int(s.podOrdinal[n])
	s.podOrdinal[n]++
	return addrAt(p, 2+ord%max(size-3, 1))
}

func addrAt(p netip.Prefix, off int) netip.Addr {
	b := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + uint32(off)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// The bulk mix, in ten-thousandths of the bulk objects (a Service brings its IPAddress too).
const (
	mixPod            = 2100
	mixEvent          = mixPod + 3400
	mixConfigMap      = mixEvent + 1100
	mixSecret         = mixConfigMap + 900
	mixLease          = mixSecret + 800
	mixService        = mixLease + 300
	mixCustom         = mixService + 600
	mixServiceAccount = 10000 // the remaining 5%
)

func (s *sequencer) bulk(idx int64) {
	r := newRNG(s.cfg.Seed, 2, uint64(idx))
	j := job{idx: idx, ns: int32(r.intn(len(s.w.namespaces))), app: int32(r.intn(appsPerNamespace))}
	h := r.intn(10000)
	switch {
	case s.churn:
		j.kind = churnKind(h)
	case s.services:
		j.kind = servicesKind(h)
	default:
		j.kind = basicKind(h)
	}
	deletable := s.setUp(&j, r)
	j.create = s.emit(j)
	j.version = 1
	s.history(j, r, 100, deletable)
}

// history queues the later revisions of a created object as the profile
// has them (permille and deletable: the basic profile's, see schedule).
func (s *sequencer) history(j job, r *rng, permille int, deletable bool) {
	switch {
	case s.churn:
		s.scheduleChurn(j, r)
	case s.services:
		s.scheduleOnce(j, r)
	default:
		s.schedule(j, r, permille, deletable)
	}
}

func basicKind(h int) kind {
	switch {
	case h < mixPod:
		return kPod
	case h < mixEvent:
		return kEvent
	case h < mixConfigMap:
		return kConfigMap
	case h < mixSecret:
		return kSecret
	case h < mixLease:
		return kLease
	case h < mixService:
		return kService
	case h < mixCustom:
		return kCustom
	}
	return kServiceAccount
}

// setUp makes the kind's own random choices for a new bulk object (a
// Service first emits its IPAddress) and says whether it may be deleted.
func (s *sequencer) setUp(j *job, r *rng) (deletable bool) {
	switch j.kind {
	case kPod:
		j.node = s.w.podNodes[r.intn(len(s.w.podNodes))]
		j.ip = s.podIP(j.node)
		s.res.Pods++
	case kEvent:
		j.node = s.w.podNodes[r.intn(len(s.w.podNodes))]
		p := s.w.nodes[j.node].cidr
		j.ip = addrAt(p, 2+r.intn(max(1<<(32-p.Bits())-3, 1)))
		if s.events%500 == 0 {
			s.eventLease = s.leaseID(len(s.leaseIDs))
			s.leaseIDs = append(s.leaseIDs, s.eventLease)
		}
		s.events++
		j.lease = s.eventLease
	case kSecret:
		switch x := r.intn(100); {
		case x < 60:
			j.sub = 0
		case x < 80:
			j.sub = 1
		case x < 98:
			j.sub = 2
		default:
			j.sub = 3
		}
	case kLease, kServiceAccount, kDeployment:
		return false
	case kService:
		ip, ok := s.nextServiceIP()
		if !ok { // the range is full: a ConfigMap instead
			j.kind = kConfigMap
			return true
		}
		j.ip = ip
		ipj := *j
		ipj.kind = kIPAddress
		s.emit(ipj) // the allocator's IPAddress first, then the Service
		s.res.Services++
		return false
	case kCustom:
		j.sub = uint8(r.intn(len(crds)))
	}
	return true
}

// schedule queues the later revisions of a created object: with probability permille/1000 one to
// three updates, and for a deletable object about 1.2% of the time a tombstone after them.
func (s *sequencer) schedule(j job, r *rng, permille int, deletable bool) {
	window := max(64, min(4096, int64(s.cfg.Keys)/50))
	due := s.step
	if r.chance(permille) {
		for k := 1; k <= r.between(1, 3); k++ {
			due += 1 + int64(r.intn(int(window)))
			u := j
			u.variant, u.version = int32(k), int64(k)+1
			s.push(due, u)
		}
	}
	if deletable && r.chance(12) {
		due += 1 + int64(r.intn(int(window)))
		t := j
		t.tomb = true
		s.push(due, t)
	}
}

func (s *sequencer) push(due int64, j job) {
	s.qseq++
	heap.Push(&s.pending, queued{due: due, seq: s.qseq, j: j})
}

// due emits every queued revision whose time has come.
func (s *sequencer) due(step int64) {
	for s.pending.Len() > 0 && s.pending[0].due <= step {
		q := heap.Pop(&s.pending).(queued)
		s.emit(q.j)
	}
}

type queued struct {
	due, seq int64
	j        job
}

type eventQueue []queued

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(a, b int) bool {
	if q[a].due != q[b].due {
		return q[a].due < q[b].due
	}
	return q[a].seq < q[b].seq
}
func (q eventQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *eventQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// writeBuckets fills every bucket but `key`, as etcd leaves them.
func (s *sequencer) writeBuckets(bw *snapshot.Writer) error {
	u64 := func(v uint64) []byte { b := make([]byte, 8); binary.BigEndian.PutUint64(b, v); return b }
	peer, client, name := "https://"+sample.ControlPlaneIP+":2380", "https://"+sample.ControlPlaneIP+":2379", "cp1"
	h := sha1.Sum([]byte(peer + "etcd-cluster")) // etcd's member ID: sha1 of peer URLs and cluster token
	id := binary.BigEndian.Uint64(h[:8])
	puts := []struct {
		bucket, k, v []byte
	}{
		{schema.Meta.Name(), schema.MetaConsistentIndexKeyName, u64(uint64(s.rev) + 1000)},
		{schema.Meta.Name(), schema.MetaTermKeyName, u64(2)},
		{schema.Meta.Name(), schema.MetaStorageVersionName, []byte("3.7.0")},
		{schema.Meta.Name(), schema.MetaConfStateName, fmt.Appendf(nil, `{"voters":[%d],"auto_leave":false}`, id)},
		{schema.Cluster.Name(), schema.ClusterClusterVersionKeyName, []byte("3.7.0")},
		{schema.Members.Name(), schema.BackendMemberKey(types.ID(id)), fmt.Appendf(nil, `{"id":%d,"peerURLs":[%q],"name":%q,"clientURLs":[%q]}`, id, peer, name, client)},
		{schema.Auth.Name(), schema.AuthRevisionKeyName, u64(1)},
	}
	for _, id := range s.leaseIDs {
		v, err := proto.Marshal(&leasepb.Lease{ID: id, TTL: 3600})
		if err != nil {
			return err
		}
		puts = append(puts, struct{ bucket, k, v []byte }{schema.Lease.Name(), u64(uint64(id)), v})
	}
	for _, p := range puts {
		if err := bw.PutBucket(p.bucket, p.k, p.v); err != nil {
			return err
		}
	}
	return bw.SetCompacted(s.res.CompactRevision)
}

// ---------------------------------------------------------------------------------------------
// Pipeline: jobs in batches to encoding goroutines, results written in order by one goroutine.

const batchSize = 256

type batch struct {
	jobs []job
	keys [][]byte
	vals [][]byte
	err  error
	done chan struct{}
}

type pipeline struct {
	w        *world
	cur      *batch
	work     chan *batch
	ordered  chan *batch
	workers  sync.WaitGroup
	writer   sync.WaitGroup
	err      atomic.Pointer[error]
	progress func(int)
}

func newPipeline(w *world, bw *snapshot.Writer, workers int, progress func(int)) *pipeline {
	p := &pipeline{w: w, work: make(chan *batch, workers*2), ordered: make(chan *batch, workers*4+4), progress: progress}
	for i := 0; i < workers; i++ {
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			for b := range p.work {
				p.encode(b)
				close(b.done)
			}
		}()
	}
	p.writer.Add(1)
	go func() {
		defer p.writer.Done()
		n := 0
		for b := range p.ordered {
			<-b.done
			if p.err.Load() != nil {
				continue // drain
			}
			err := b.err
			for i := 0; err == nil && i < len(b.keys); i++ {
				err = bw.Put(b.keys[i], b.vals[i])
			}
			if err != nil {
				p.err.CompareAndSwap(nil, &err)
				continue
			}
			if n += len(b.keys); p.progress != nil && n>>16 != (n-len(b.keys))>>16 {
				p.progress(n)
			}
		}
	}()
	p.cur = &batch{jobs: make([]job, 0, batchSize)}
	return p
}

func (p *pipeline) add(j job) {
	p.cur.jobs = append(p.cur.jobs, j)
	if len(p.cur.jobs) == batchSize {
		p.flush()
	}
}

func (p *pipeline) flush() {
	if len(p.cur.jobs) == 0 {
		return
	}
	b := p.cur
	b.done = make(chan struct{})
	p.ordered <- b
	p.work <- b
	p.cur = &batch{jobs: make([]job, 0, batchSize)}
}

func (p *pipeline) failed() error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// close writes what is left and waits for the writer.
func (p *pipeline) close() error {
	p.flush()
	close(p.work)
	close(p.ordered)
	p.workers.Wait()
	p.writer.Wait()
	return p.failed()
}

func (p *pipeline) encode(b *batch) {
	b.keys = make([][]byte, len(b.jobs))
	b.vals = make([][]byte, len(b.jobs))
	revKeys := make([]byte, 18*len(b.jobs))
	for i := range b.jobs {
		j := &b.jobs[i]
		rk := revKeys[18*i : 18*i+17 : 18*i+18]
		binary.BigEndian.PutUint64(rk, uint64(j.rev))
		rk[8] = '_' // sub-revision 0: one write per revision, as the apiserver's transactions
		key := p.w.key(j)
		if j.tomb {
			b.keys[i] = append(rk, 't')
			b.vals[i] = marshalKV(key, 0, 0, 0, nil, 0)
			continue
		}
		v, err := p.w.value(j)
		if err != nil {
			b.err = fmt.Errorf("gen: %s: %w", key, err)
			return
		}
		b.keys[i] = rk
		b.vals[i] = marshalKV(key, j.create, j.rev, j.version, v, j.lease)
	}
}

// marshalKV encodes an mvccpb.KeyValue exactly as proto.Marshal does (fields in number order,
// zero values omitted), without an intermediate message.
func marshalKV(key string, create, mod, version int64, value []byte, lease int64) []byte {
	n := 1 + protowire.SizeBytes(len(key))
	for _, v := range []int64{create, mod, version, lease} {
		if v != 0 {
			n += 1 + protowire.SizeVarint(uint64(v))
		}
	}
	if len(value) > 0 {
		n += 1 + protowire.SizeBytes(len(value))
	}
	b := make([]byte, 0, n)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, key)
	for i, v := range []int64{create, mod, version} {
		if v != 0 {
			b = protowire.AppendTag(b, protowire.Number(2+i), protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(v))
		}
	}
	if len(value) > 0 {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, value)
	}
	if lease != 0 {
		b = protowire.AppendTag(b, 6, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(lease))
	}
	return b
}

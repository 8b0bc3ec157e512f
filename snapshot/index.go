package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"hash/maphash"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/progress"
)

// Index knows, for every user key of a snapshot, its newest revision. It is
// built by one pass over the `key` bucket and holds no values, and, to stay
// small on snapshots of a million keys, no key strings either: keys are
// recorded by a hash of up to 32 bits, sorted, beside the position in the
// bucket of their newest revision: the hash's top byte picks one of 256
// parts, its top bits (8 to 16) a slot of a table of starts, its next 16
// bits are kept (6 bytes a key, exactly sized, and 4 bytes a slot, a slot
// for about 16 keys); the revision is
// read back from the bucket when asked for. Where two revisions share a
// hash the stored keys are read back to tell an update from a collision,
// and the keys of a collision are then recorded by name. Keys under the
// prefixes the caller names (IndexOptions.Named) are recorded by name, so
// that they can be listed quickly; other prefixes are listed by a walk of
// the bucket.
type Index struct {
	// hashes has, per part, one entry per key not named: its hash's 16
	// bits below the slot's; sorted within a slot.
	hashes [parts][]uint16
	ords   [parts][]uint32 // beside hashes: the newest revision's position in the bucket, or collided
	starts []uint32        // 1<<slotBits: where each slot's keys start in its part's arrays
	// slotBits is how many top bits of the hash pick a slot; the index
	// tells keys apart by the hash's top slotBits+16 bits.
	slotBits uint
	named    []namedKey // Named prefixes, and keys whose hash collided; sorted by key
	// marks holds the revision of every markEvery-th entry of the bucket,
	// where entryAt starts its walk to a position.
	marks    []Revision
	seed     maphash.Seed
	opts     IndexOptions
	namedSet prefixSet // opts.Named
	snap     *Snapshot
	// live has one bit per entry of the bucket, in bucket order: set for
	// the newest revision of each live key. Live walks the same read-only
	// bucket in the same order and reads its answers here, without hashing.
	live []uint64

	// Entries is the number of entries in the `key` bucket (all revisions,
	// tombstones included); Tombstones how many of them are tombstones.
	Entries    int
	Tombstones int
	// LiveKeys is the number of keys whose newest revision is not a
	// tombstone (of the keys recorded, with IndexOptions.Only).
	LiveKeys int
	// LastRevision is the highest revision in the `key` bucket;
	// LastKeyRevision the highest that holds a user key (not a marker).
	LastRevision    Revision
	LastKeyRevision Revision
	// CurrentRevision is what etcd would report as its current revision:
	// the highest of LastRevision.Main and the two compaction markers.
	CurrentRevision int64
	// Markers counts empty-key entries (etcdutl's --bump-revision writes one);
	// they carry a revision but no user key and are not live keys.
	Markers int
	// counted is, per IndexOptions.Counted prefix, how many live keys are
	// under it.
	counted map[string]int

	// Walks counts the LiveKeysWithPrefix calls that walked the whole bucket
	// (a prefix not named in IndexOptions.Named): each costs a pass over
	// every entry, so a migration should make none.
	Walks int
}

type latest struct {
	rev  Revision
	ord  uint32 // the entry's position in the bucket (see Index.live)
	tomb bool
}

// namedKey is a key recorded by name: a sorted slice of them is half the
// size of a map (6 MB on the 65k Services and IPAddresses of a large
// cluster), and lists a prefix without visiting the other keys.
type namedKey struct {
	key string
	latest
}

const (
	// collided, as a hash's position, says several keys share the hash:
	// all of them are in named. No entry has that position (IndexWith
	// refuses a bucket that long).
	collided = math.MaxUint32
	// markEvery is how far apart the marks are: a lookup reads at most
	// this many entries past a mark, and the marks cost 16 bytes each.
	markEvery = 64
)

// revisionKey is one revision of a hashed key while the bucket is read (16
// bytes): its hash, its position, and a second, independent 64-bit hash of
// the key: revisions under one hash whose second hashes differ are
// certainly of different keys.
type revisionKey struct {
	hash  uint32
	ord   uint32
	check uint64
}

// parts is how many parts the index splits keys into, by their hash's top
// byte.
const parts = 256

// revisionParts holds the revisions of hashed keys while the bucket is
// read, split by the top byte of their hash, each part in blocks of
// revBlock: nothing is copied to grow (one array grown by appends copied
// 0.36 GB at 3.9M revisions and held a copy's worth of garbage beside
// them), and each part is sorted, packed and let go alone, so the packed
// index and the revisions are never both whole.
type revisionParts [parts][][]revisionKey

const revBlock = 512 // 8 KiB

func (rp *revisionParts) add(r revisionKey) {
	bs := rp[r.hash>>24]
	if len(bs) == 0 || len(bs[len(bs)-1]) == revBlock {
		bs = append(bs, make([]revisionKey, 0, revBlock))
		rp[r.hash>>24] = bs
	}
	bs[len(bs)-1] = append(bs[len(bs)-1], r)
}

// len counts the revisions.
func (rp *revisionParts) len() int {
	n := 0
	for _, bs := range rp {
		for _, b := range bs {
			n += len(b)
		}
	}
	return n
}

// take returns part p's revisions in one slice and lets its blocks go.
func (rp *revisionParts) take(p int) []revisionKey {
	n := 0
	for _, b := range rp[p] {
		n += len(b)
	}
	out := make([]revisionKey, 0, n)
	for _, b := range rp[p] {
		out = append(out, b...)
	}
	rp[p] = nil
	return out
}

// IndexOptions tune what an Index records.
type IndexOptions struct {
	// Named are key prefixes whose keys are recorded by name, so that
	// LiveKeysWithPrefix lists them without walking the bucket: the
	// prefixes the caller will list (the rules' prefixes, the Nodes).
	Named []string
	// Only, when set, records only the keys it accepts (every entry is
	// still validated and counted); Live must not be used then.
	Only func(key []byte) bool
	// Counted are key prefixes whose live keys LiveCount counts, without
	// recording them by name (the Pods of a large cluster): one bit per
	// entry each while the bucket is read.
	Counted []string

	hash func(key []byte) uint32 // tests: force collisions
}

// Index walks the `key` bucket once, validating every revision key and
// every KeyValue, and records the newest revision of each user key.
func (s *Snapshot) Index(ctx context.Context, p progress.Reporter) (*Index, error) {
	return s.IndexWith(ctx, p, IndexOptions{})
}

// IndexFiltered is Index recording only the keys keep accepts.
func (s *Snapshot) IndexFiltered(ctx context.Context, p progress.Reporter, keep func(key []byte) bool) (*Index, error) {
	return s.IndexWith(ctx, p, IndexOptions{Only: keep})
}

// IndexWith is Index with options.
func (s *Snapshot) IndexWith(ctx context.Context, p progress.Reporter, opts IndexOptions) (ix *Index, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	p = progress.OrNop(p)
	p.Start("index", "bytes", s.DBSize)
	ix = &Index{seed: maphash.MakeSeed(), opts: opts, namedSet: newPrefixSet(opts.Named), snap: s}
	if ix.opts.hash == nil {
		seed := ix.seed
		ix.opts.hash = func(key []byte) uint32 { return uint32(maphash.Bytes(seed, key)) }
	}
	revs := new(revisionParts)                   // one per revision of a hashed key, in bucket order
	var tombs []uint64                           // one bit per entry: a tombstone
	under := make([][]uint64, len(opts.Counted)) // per Counted prefix, one bit per entry: a key under it
	counted := make([][]byte, len(opts.Counted))
	for i, c := range opts.Counted {
		counted[i] = []byte(c)
	}
	checkSeed := maphash.MakeSeed()
	c := s.tx.Bucket(KeyBucket).Cursor()
	var pending int64
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rev, tomb, kv, err := s.parseEntry(k, v, prev)
		if err != nil {
			return nil, err
		}
		prev = k
		if ix.Entries == math.MaxUint32 {
			return nil, invalid(s.Path, "key bucket has over %d entries", uint32(math.MaxUint32))
		}
		ord := uint32(ix.Entries)
		ix.Entries++
		ix.LastRevision = rev
		if ord%markEvery == 0 {
			ix.marks = append(ix.marks, rev)
		}
		if ord%64 == 0 {
			tombs = append(tombs, 0)
			for i := range under {
				under[i] = append(under[i], 0)
			}
		}
		pending += int64(len(k) + len(v) + 16)
		if ix.Entries&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p.Add(pending)
			pending = 0
		}
		if len(kv.Key) == 0 {
			ix.Markers++
			continue
		}
		ix.LastKeyRevision = rev
		if tomb {
			ix.Tombstones++
			tombs[ord/64] |= 1 << (ord % 64)
		}
		if opts.Only != nil && !opts.Only(kv.Key) {
			continue
		}
		for i, c := range counted {
			if bytes.HasPrefix(kv.Key, c) {
				under[i][ord/64] |= 1 << (ord % 64)
			}
		}
		ix.record(revs, kv.Key, latest{rev: rev, ord: ord, tomb: tomb}, checkSeed)
	}
	p.Add(pending)
	if err := ix.pack(revs); err != nil {
		return nil, err
	}
	ix.sortNamed()
	ix.markLive(tombs)
	ix.count(under)
	ix.CurrentRevision = max(ix.LastRevision.Main, s.Meta.ScheduledCompact, s.Meta.FinishedCompact)
	p.Done() // only a finished phase is reported done
	return ix, nil
}

// parseEntry parses one `key` bucket entry and checks it comes after prev.
func (s *Snapshot) parseEntry(k, v, prev []byte) (Revision, bool, KV, error) {
	rev, tomb, err := ParseRevisionKey(k)
	if err != nil {
		return rev, false, KV{}, invalid(s.Path, "key bucket: %v", err)
	}
	if prev != nil && bytes.Compare(k, prev) <= 0 {
		return rev, false, KV{}, invalid(s.Path, "key bucket is out of order (revision key %x after %x): the database is corrupt", k, prev)
	}
	kv, err := ParseKV(v)
	if err != nil {
		return rev, false, KV{}, invalid(s.Path, "revision %s: value is not a valid mvccpb.KeyValue: %v", RevisionString(rev), err)
	}
	return rev, tomb, kv, nil
}

// record notes one revision of key: by name under a Named prefix (the
// last wins: bucket order is revision order), else appended to revs.
func (ix *Index) record(revs *revisionParts, key []byte, l latest, checkSeed maphash.Seed) {
	if ix.isNamed(key) {
		ix.named = append(ix.named, namedKey{key: string(key), latest: l})
		return
	}
	revs.add(revisionKey{hash: ix.opts.hash(key), ord: l.ord, check: maphash.Bytes(checkSeed, key)})
}

// pack sorts the revisions of hashed keys by hash and keeps the newest of
// each key, in arrays of exactly that many entries. Revisions under one
// hash are of one key when their second, 64-bit hashes agree too (80 to
// 96 bits in all: for 3M keys, two distinct keys agree with a probability
// of about 10^-16); otherwise their stored keys are read back and tell them apart
// exactly: several keys under one hash (a collision: about a thousand
// pairs of 32-bit hashes among 3M keys) move to named, with a marker left
// under the hash. Each part is let go once it is packed.
func (ix *Index) pack(revs *revisionParts) error {
	ix.slotBits = slotBitsFor(revs.len())
	ix.starts = make([]uint32, 1<<ix.slotBits)
	for p := range parts {
		part := revs.take(p)
		slices.SortFunc(part, func(a, b revisionKey) int {
			if c := cmp.Compare(a.hash, b.hash); c != 0 {
				return c
			}
			return cmp.Compare(a.ord, b.ord)
		})
		n := ix.countHashes(part)
		hashes, ords := make([]uint16, 0, n), make([]uint32, 0, n)
		for i := 0; i < len(part); {
			r := ix.reduce(part[i].hash)
			j := i + 1
			for j < len(part) && ix.reduce(part[j].hash) == r {
				j++
			}
			ord, err := ix.newestOf(part[i:j])
			if err != nil {
				return err
			}
			hashes, ords = append(hashes, uint16(r)), append(ords, ord)
			ix.starts[r>>16]++ // counted here, made starts below
			i = j
		}
		ix.hashes[p], ix.ords[p] = hashes, ords
		per := 1 << (ix.slotBits - 8)
		off := uint32(0)
		for s := p * per; s < (p+1)*per; s++ {
			off, ix.starts[s] = off+ix.starts[s], off
		}
	}
	return nil
}

// slotBitsFor is the slot table's size for about n keys: a slot for
// about 16 of them, at least one a part, at most 1<<16 slots (the whole
// 32-bit hash kept).
func slotBitsFor(n int) uint {
	return uint(min(max(bits.Len(uint(n))-4, 8), 16))
}

// reduce is the part of a hash the index keeps: its top slotBits+16 bits,
// the slot above the 16 bits stored.
func (ix *Index) reduce(h uint32) uint32 {
	return h >> (16 - ix.slotBits)
}

// countHashes counts the distinct reduced hashes of sorted revisions.
func (ix *Index) countHashes(revs []revisionKey) int {
	n := 0
	for i := range revs {
		if i == 0 || ix.reduce(revs[i].hash) != ix.reduce(revs[i-1].hash) {
			n++
		}
	}
	return n
}

// newestOf reduces the revisions under one hash (in bucket order) to the
// position the index keeps: the newest's, or collided.
func (ix *Index) newestOf(run []revisionKey) (uint32, error) {
	last := run[len(run)-1]
	same := true
	for _, r := range run {
		same = same && r.check == last.check
	}
	if same {
		return last.ord, nil
	}
	byKey := map[string]latest{}
	for _, r := range run {
		l, stored, err := ix.entryAt(r.ord)
		if err != nil {
			return 0, err
		}
		byKey[string(stored)] = l // in bucket order: the last wins
	}
	if len(byKey) == 1 {
		return last.ord, nil
	}
	for k, l := range byKey {
		ix.named = append(ix.named, namedKey{key: k, latest: l})
	}
	return collided, nil
}

// sortNamed sorts the keys recorded by name and keeps the newest revision
// of each (the last in the bucket), in a slice of exactly that many.
func (ix *Index) sortNamed() {
	slices.SortFunc(ix.named, func(a, b namedKey) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.ord, b.ord)
	})
	n := 0
	for i := range ix.named {
		if i+1 < len(ix.named) && ix.named[i+1].key == ix.named[i].key {
			continue // an older revision
		}
		ix.named[n] = ix.named[i]
		n++
	}
	ix.named = slices.Clone(ix.named[:n])
}

// Intern returns the index's own copy of key when key is recorded by name
// (under a Named prefix), else key: a caller that keeps the keys it meets
// under those prefixes keeps one string per key instead of two (6 MB on
// the 131k Services and IPAddresses of the 8 GiB bench input).
func (ix *Index) Intern(key string) string {
	i, ok := slices.BinarySearchFunc(ix.named, key, func(n namedKey, k string) int { return strings.Compare(n.key, k) })
	if !ok {
		return key
	}
	return ix.named[i].key
}

// findNamed returns what is recorded by name for key.
func (ix *Index) findNamed(key string) (latest, bool) {
	i, ok := slices.BinarySearchFunc(ix.named, key, func(n namedKey, k string) int { return strings.Compare(n.key, k) })
	if !ok {
		return latest{}, false
	}
	return ix.named[i].latest, true
}

// markLive sets the live bit of the newest revision of every live key and
// counts them; tombs has a bit set for every tombstone entry.
func (ix *Index) markLive(tombs []uint64) {
	ix.live = make([]uint64, (ix.Entries+63)/64)
	set := func(ord uint32, tomb bool) {
		if !tomb {
			ix.live[ord/64] |= 1 << (ord % 64)
			ix.LiveKeys++
		}
	}
	for _, ords := range ix.ords {
		for _, ord := range ords {
			if ord != collided {
				set(ord, tombs[ord/64]&(1<<(ord%64)) != 0)
			}
		}
	}
	for _, n := range ix.named {
		set(n.ord, n.tomb)
	}
}

// count sets counted: per Counted prefix, the entries that are both under
// it and the newest revision of a live key.
func (ix *Index) count(under [][]uint64) {
	ix.counted = make(map[string]int, len(under))
	for i, bs := range under {
		n := 0
		for w, b := range bs {
			n += bits.OnesCount64(b & ix.live[w])
		}
		ix.counted[ix.opts.Counted[i]] = n
	}
}

// LiveCount is how many live keys are under prefix, when the index was
// asked to count them (IndexOptions.Counted); ok is false otherwise.
func (ix *Index) LiveCount(prefix string) (n int, ok bool) {
	n, ok = ix.counted[prefix]
	return n, ok
}

// isNamed reports whether key is under one of the Named prefixes.
func (ix *Index) isNamed(key []byte) bool { return ix.namedSet.has(key) }

// prefixSet answers whether a key is under one of a few prefixes (the
// rules' Named, some thirty with repeats, nearly all under /registry/):
// for each of the 3.9M entries of the 8 GiB bench, comparing every prefix
// cost 0.7 s of the index pass. A key is compared only with the prefixes
// whose byte after what they all begin with is the key's.
type prefixSet struct {
	list   []string      // the prefixes, each once
	common string        // what every prefix begins with
	next   [256][]string // the prefixes longer than common, by their byte after it
	all    bool          // common is itself one of the prefixes
}

func newPrefixSet(prefixes []string) prefixSet {
	var ps prefixSet
	for _, p := range prefixes {
		if !slices.Contains(ps.list, p) {
			ps.list = append(ps.list, p)
		}
	}
	if len(ps.list) == 0 {
		return ps
	}
	ps.common = ps.list[0]
	for _, p := range ps.list[1:] {
		n := 0
		for n < len(p) && n < len(ps.common) && p[n] == ps.common[n] {
			n++
		}
		ps.common = ps.common[:n]
	}
	for _, p := range ps.list {
		if len(p) == len(ps.common) {
			ps.all = true
		} else {
			b := p[len(ps.common)]
			ps.next[b] = append(ps.next[b], p)
		}
	}
	return ps
}

func (ps *prefixSet) has(key []byte) bool {
	c := len(ps.common)
	if len(ps.list) == 0 || len(key) < c || string(key[:c]) != ps.common {
		return false
	}
	if ps.all {
		return true
	}
	if len(key) == c {
		return false
	}
	for _, p := range ps.next[key[c]] {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}

// liveAt reports whether the entry at position ord of the bucket is the
// newest revision of a live key.
func (ix *Index) liveAt(ord int) bool {
	w := ord / 64
	return w < len(ix.live) && ix.live[w]&(1<<(ord%64)) != 0
}

// entryAt reads back the entry at position ord of the bucket, its revision
// and user key: a seek to the mark at or before it, then at most
// markEvery-1 steps. Only lookups of hashed keys and collisions read it.
func (ix *Index) entryAt(ord uint32) (latest, []byte, error) {
	m := int(ord / markEvery)
	if m >= len(ix.marks) {
		return latest{}, nil, invalid(ix.snap.Path, "entry %d of the key bucket cannot be read back", ord)
	}
	c := ix.snap.tx.Bucket(KeyBucket).Cursor()
	k, v := c.Seek(RevisionKey(ix.marks[m])) // lands on the mark, tombstone or not
	for i := uint32(m) * markEvery; i < ord && k != nil; i++ {
		k, v = c.Next()
	}
	rev, tomb, err := ParseRevisionKey(k)
	kv, kerr := ParseKV(v)
	if k == nil || err != nil || kerr != nil {
		return latest{}, nil, invalid(ix.snap.Path, "entry %d of the key bucket cannot be read back", ord)
	}
	return latest{rev: rev, ord: ord, tomb: tomb}, kv.Key, nil
}

// find returns what is recorded for key.
func (ix *Index) find(key []byte) (latest, bool) {
	if l, ok := ix.findNamed(string(key)); ok {
		return l, true
	}
	if ix.isNamed(key) {
		return latest{}, false
	}
	if len(ix.starts) == 0 {
		return latest{}, false // nothing hashed
	}
	h := ix.opts.hash(key)
	r, p := ix.reduce(h), h>>24
	slot := r >> 16
	hashes, ords := ix.hashes[p], ix.ords[p]
	lo, hi := ix.starts[slot], uint32(len(hashes))
	if next := slot + 1; next&(1<<(ix.slotBits-8)-1) != 0 { // the next slot is in this part
		hi = ix.starts[next]
	}
	i, found := slices.BinarySearch(hashes[lo:hi], uint16(r))
	ords = ords[lo:]
	if !found || ords[i] == collided {
		return latest{}, false // a collided hash: every key under it is named
	}
	// The hash is the key's, or another key's that never met this one in
	// the bucket: confirm against the stored key.
	l, stored, err := ix.entryAt(ords[i])
	if err != nil || !bytes.Equal(stored, key) {
		return latest{}, false
	}
	return l, true
}

// Lookup returns the live revision of key, or ok=false when the key does
// not exist or its newest revision is a tombstone.
func (ix *Index) Lookup(key []byte) (Revision, bool) {
	l, ok := ix.find(key)
	if !ok || l.tomb {
		return Revision{}, false
	}
	return l.rev, true
}

// KeyRev is a live key and its revision.
type KeyRev struct {
	Key string
	Rev Revision
}

// LiveKeysWithPrefix returns the live keys that start with prefix, sorted
// by key: from the names recorded when prefix is under a Named prefix, else
// by one walk of the bucket.
func (ix *Index) LiveKeysWithPrefix(prefix string) []KeyRev {
	var out []KeyRev
	covered := false
	for _, p := range ix.opts.Named {
		if strings.HasPrefix(prefix, p) {
			covered = true
		}
	}
	if covered || ix.opts.Only != nil {
		i, _ := slices.BinarySearchFunc(ix.named, prefix, func(n namedKey, p string) int { return strings.Compare(n.key, p) })
		for _, n := range ix.named[i:] {
			if !strings.HasPrefix(n.key, prefix) {
				break // sorted: the keys under prefix are together
			}
			if !n.tomb {
				out = append(out, KeyRev{Key: n.key, Rev: n.rev})
			}
		}
		if ix.opts.Only != nil && !covered {
			for _, kr := range ix.walk(prefix) {
				if _, dup := ix.findNamed(kr.Key); !dup {
					out = append(out, kr)
				}
			}
		}
	} else {
		out = ix.walk(prefix)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// walk lists the live keys under prefix by reading the whole bucket.
func (ix *Index) walk(prefix string) []KeyRev {
	ix.Walks++
	var out []KeyRev
	func() {
		defer func() { recover() }() // the bucket was read whole by the index already
		c := ix.snap.tx.Bucket(KeyBucket).Cursor()
		ord := -1
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if ord++; !ix.liveAt(ord) {
				continue
			}
			kv, err := ParseKV(v)
			if err != nil || !bytes.HasPrefix(kv.Key, []byte(prefix)) {
				continue
			}
			rev, _, err := ParseRevisionKey(k)
			if err == nil {
				out = append(out, KeyRev{Key: string(kv.Key), Rev: rev})
			}
		}
	}()
	return out
}

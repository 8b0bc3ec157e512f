package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"

	bolt "go.etcd.io/bbolt"
)

// A bulkLoader writes the `key` bucket of a new bbolt database as pages,
// straight into the file, instead of through bbolt's Put and commits. The
// keys arrive in increasing order, so the B+tree can be built bottom-up:
// leaf pages are filled one after the other and written in 1 MiB chunks as
// they fill, and each branch level above them is filled the same way from
// the first keys of the pages below it. Through bbolt, every key was
// inserted into a node, every 4 MiB transaction split its nodes into pages
// and wrote them one pwrite a page, and bbolt kept the dirty pages of a
// transaction in memory (BenchmarkPageSize and BenchmarkBulkLoader measure
// the two).
//
// The format is bbolt's (go.etcd.io/bbolt bboltFormatVersion,
// internal/common page.go, meta.go and inode.go, and db.go's init; the
// constants below cite each): a 16-byte page header (id,
// flags, count, overflow), then count 16-byte elements, then the elements'
// keys and values; an element's pos is the offset of its key from the
// element itself. A page larger than a page (one big value) runs on into
// `overflow` more pages. The start of the database (two metas, the empty
// freelist at page 2, the root leaf at page 3, as bbolt's own init writes
// them) comes last, from finish: the root leaf names the `key` bucket and
// both metas point at it. bbolt then opens the file as its own, and
// Tx.Check accepts it (TestBulkLoader).
type bulkLoader struct {
	f        *os.File
	pageSize int
	next     uint64 // the next page id to allocate
	// chunk holds whole pages from page id chunkPg on, not yet written.
	chunk   []byte
	chunkPg uint64
	// pend is the leaf page being filled: its entries, still the caller's
	// slices (valid until the next Commit, see Writer.Put), and its size.
	pend []kv
	used int
	// levels are the branch pages being filled, the leaves' parents
	// first: at most a page of children each.
	levels []*pageRefs
	// flushed counts bytes written since the last failpoint.
	flushed int64
	txBytes int64
	// wb starts the writeback of the chunks as they are written.
	wb *writeBehind
}

type kv struct{ k, v []byte }

// pageRefs lists pages by their first key, the keys packed in one slice:
// the children of a branch page being filled.
type pageRefs struct {
	keys []byte
	ends []uint32
	ids  []uint64
	size int // the page they would make, in bytes
}

func (r *pageRefs) add(key []byte, id uint64) {
	r.keys = append(r.keys, key...)
	r.ends = append(r.ends, uint32(len(r.keys)))
	r.ids = append(r.ids, id)
	r.size += elementSize + len(key)
}

// keepLast drops every child but the last.
func (r *pageRefs) keepLast() {
	n := len(r.ids) - 1
	k, id := r.key(n), r.ids[n]
	r.keys = append(r.keys[:0], k...) // k is at the end: copy forward
	r.ends = append(r.ends[:0], uint32(len(k)))
	r.ids = append(r.ids[:0], id)
	r.size = pageHeaderSize + elementSize + len(k)
}

func (r *pageRefs) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.keys[start:r.ends[i]]
}

func (r *pageRefs) len() int { return len(r.ids) }

// bboltFormatVersion is the bbolt release whose on-disk format the bulk
// loader writes, checked against that release's sources: the constants
// below, bulkLoader's page layout, writeFixed and writeMetas.
// TestBboltFormatVersion fails when go.mod's go.etcd.io/bbolt is another
// version: re-check what the constants cite, then update this.
const bboltFormatVersion = "v1.5.0"

// bbolt's on-disk format, as of bboltFormatVersion. The files are bbolt's.
const (
	// internal/common/page.go: PageHeaderSize (id 8, flags 2, count 2,
	// overflow 4), BranchPageElementSize (pos 4, ksize 4, pgid 8) and
	// LeafPageElementSize (flags 4, pos 4, ksize 4, vsize 4); the page
	// flags; BucketLeafFlag, a leaf element that is a bucket.
	pageHeaderSize   = 16
	elementSize      = 16 // a leaf or a branch page element
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01
	// internal/common/types.go: Version (the file format's; Magic is
	// boltMagic, open.go).
	boltVersion = 2
	// internal/common/meta.go: Meta (magic, version, pageSize, flags,
	// root InBucket {root pgid, sequence}, freelist, pgid, txid, checksum)
	// and Sum64, FNV-64a of the fields before the checksum.
	metaChecksumOff = 56 // the meta fields a checksum covers
	// node.go (node.write): a page's count is a uint16, and 0xFFFF means
	// the count is in the first element (freelist pages only).
	maxPageCount = 0xFFFF - 1
	// db.go (DB.init): metas at pages 0 and 1, the empty freelist at page
	// 2, the root bucket's empty leaf at page 3, the next page 4. The
	// freelist stays empty, every page below the high-water mark being in
	// use: bbolt reads it from page 2 (db.go loadFreelist), and the first
	// commit with NoFreelistSync (etcd's and writeSmall's option) marks it
	// unsynced, so later opens rebuild it from the reachable pages (db.go
	// freepages).
	firstFreePage = 4 // after two metas, the freelist and the root leaf
	rootLeafPage  = 3
	freelistPage  = 2
)

// chunkBytes is how much the loader writes at once.
const chunkBytes = 1 << 20

// newBulkLoader writes into f, which is expected to grow to about
// sizeHint bytes (0: unknown; see newWriteBehind).
func newBulkLoader(f *os.File, pageSize int, txBytes, sizeHint int64) *bulkLoader {
	return &bulkLoader{
		f: f, pageSize: pageSize, txBytes: txBytes, wb: newWriteBehind(f, sizeHint),
		next: firstFreePage, chunkPg: firstFreePage,
		chunk: make([]byte, 0, max(chunkBytes, pageSize)),
		used:  pageHeaderSize,
	}
}

// maxBulkKey is the longest key the loader lays out at pageSize: three
// children, each named by its first key, must fit in a branch page, so
// that push, which writes a full level's page but for its last child,
// never writes a branch page of one child (bbolt's minimum is two, and
// its rebalance panics, "parent must have at least 2 children", on
// fewer). etcd's `key` bucket keys are 17- or 18-byte revisions.
func maxBulkKey(pageSize int) int {
	return (pageSize-pageHeaderSize)/3 - elementSize
}

// add appends one entry; keys must be non-empty and increasing (the
// Writer checks the order). A key or value the format cannot hold is
// refused, before anything of it is written.
func (b *bulkLoader) add(k, v []byte) error {
	if len(k) == 0 {
		return errors.New("internal error: an empty key")
	}
	if len(k) > maxBulkKey(b.pageSize) || len(v) > bolt.MaxValueSize {
		return tooLarge(len(k), len(v), b.pageSize)
	}
	sz := elementSize + len(k) + len(v)
	if len(b.pend) > 0 && (b.used+sz > b.pageSize || len(b.pend) == maxPageCount) {
		if err := b.writeLeaf(); err != nil {
			return err
		}
	}
	b.pend = append(b.pend, kv{k, v})
	b.used += sz
	return nil
}

// tooLarge is the refusal of an entry the bulk loader cannot lay out, in
// one sentence: what is too large, and whether the bbolt writer takes it.
func tooLarge(keyLen, valueLen, pageSize int) error {
	switch {
	case keyLen > bolt.MaxKeySize:
		return fmt.Errorf("a key of %d bytes is longer than bbolt allows (%d bytes)", keyLen, bolt.MaxKeySize)
	case valueLen > bolt.MaxValueSize:
		return fmt.Errorf("a value of %d bytes is longer than bbolt allows (%d bytes)", valueLen, bolt.MaxValueSize)
	}
	return fmt.Errorf("a key of %d bytes is longer than the bulk writer lays out in %d-byte pages (%d bytes); write with --writer %s, which does",
		keyLen, pageSize, maxBulkKey(pageSize), WriterBbolt)
}

// writeLeaf writes the pending entries as one leaf page (with overflow
// pages if one value is larger than a page).
func (b *bulkLoader) writeLeaf() error {
	id, p, err := b.alloc(b.used)
	if err != nil {
		return err
	}
	putHeader(p, id, leafPageFlag, len(b.pend), len(p)/b.pageSize-1)
	off := pageHeaderSize + elementSize*len(b.pend)
	for i, e := range b.pend {
		el := p[pageHeaderSize+elementSize*i:]
		binary.NativeEndian.PutUint32(el[0:], 0) // flags: a plain value
		binary.NativeEndian.PutUint32(el[4:], uint32(off-(pageHeaderSize+elementSize*i)))
		binary.NativeEndian.PutUint32(el[8:], uint32(len(e.k)))
		binary.NativeEndian.PutUint32(el[12:], uint32(len(e.v)))
		off += copy(p[off:], e.k)
		off += copy(p[off:], e.v)
	}
	clear(p[off:])
	if err := b.push(0, b.pend[0].k, id); err != nil {
		return err
	}
	clear(b.pend) // drop the references to the caller's slices
	b.pend = b.pend[:0]
	b.used = pageHeaderSize
	return nil
}

// alloc gives size bytes rounded up to whole pages at the end of the
// chunk, flushing the chunk first if they do not fit.
func (b *bulkLoader) alloc(size int) (uint64, []byte, error) {
	n := (size + b.pageSize - 1) / b.pageSize * b.pageSize
	if len(b.chunk)+n > cap(b.chunk) {
		if err := b.flush(); err != nil {
			return 0, nil, err
		}
		if n > cap(b.chunk) {
			b.chunk = make([]byte, 0, n)
		}
	}
	id := b.next
	b.next += uint64(n / b.pageSize)
	b.chunk = b.chunk[:len(b.chunk)+n]
	return id, b.chunk[len(b.chunk)-n:], nil
}

// flush writes the chunk's pages at their place in the file.
func (b *bulkLoader) flush() error {
	if len(b.chunk) == 0 {
		return nil
	}
	off := int64(b.chunkPg) * int64(b.pageSize)
	if _, err := b.f.WriteAt(b.chunk, off); err != nil {
		return err
	}
	b.wb.wrote(off, int64(len(b.chunk)))
	b.flushed += int64(len(b.chunk))
	b.chunkPg = b.next
	b.chunk = b.chunk[:0]
	if b.flushed >= b.txBytes {
		b.flushed = 0
		failpointTxCommitted()
	}
	return nil
}

// push adds a child page to the branch level lv (0: the leaves' parents).
// A level whose page is full is written, but for its last child, which
// stays: so no level ends with a lone child, bbolt's minimum for a branch
// page being two. Only the top level ends with one child: the root.
func (b *bulkLoader) push(lv int, key []byte, id uint64) error {
	if lv == len(b.levels) {
		b.levels = append(b.levels, &pageRefs{size: pageHeaderSize})
	}
	l := b.levels[lv]
	if l.len() >= 2 && (l.size+elementSize+len(key) > b.pageSize || l.len() == maxPageCount) {
		if err := b.writeBranch(lv, l.len()-1); err != nil {
			return err
		}
		l.keepLast()
	}
	l.add(key, id)
	return nil
}

// writeBranch writes the first n children of level lv as a branch page and
// pushes it to the level above.
func (b *bulkLoader) writeBranch(lv, n int) error {
	l := b.levels[lv]
	size := pageHeaderSize + elementSize*n + int(l.ends[n-1])
	id, p, err := b.alloc(size)
	if err != nil {
		return err
	}
	putHeader(p, id, branchPageFlag, n, len(p)/b.pageSize-1)
	off := pageHeaderSize + elementSize*n
	for i := range n {
		el := p[pageHeaderSize+elementSize*i:]
		k := l.key(i)
		binary.NativeEndian.PutUint32(el[0:], uint32(off-(pageHeaderSize+elementSize*i)))
		binary.NativeEndian.PutUint32(el[4:], uint32(len(k)))
		binary.NativeEndian.PutUint64(el[8:], l.ids[i])
		off += copy(p[off:], k)
	}
	clear(p[off:])
	return b.push(lv+1, l.key(0), id)
}

// finish writes the rest of the database (finishPages) and closes the
// file, whether or not that succeeded.
func (b *bulkLoader) finish() error {
	err := b.finishPages()
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// abort closes the file, unfinished.
func (b *bulkLoader) abort() { b.f.Close() }

// finishPages writes the last leaf, what is left of each branch level, the
// freelist and root leaf (pages 2 and 3) and the two metas: the whole
// database bbolt then opens. With no entry at all the root leaf is empty,
// and bbolt creates the `key` bucket.
func (b *bulkLoader) finishPages() error {
	if len(b.pend) > 0 {
		if err := b.writeLeaf(); err != nil {
			return err
		}
	}
	root := uint64(0)
	for lv := 0; lv < len(b.levels); lv++ { // writeBranch may add a level
		l := b.levels[lv]
		if lv == len(b.levels)-1 && l.len() == 1 {
			root = l.ids[0]
			break
		}
		if err := b.writeBranch(lv, l.len()); err != nil {
			return err
		}
	}
	b.levels = nil
	if err := b.flush(); err != nil {
		return err
	}
	if err := b.writeFixed(root); err != nil {
		return err
	}
	return b.writeMetas()
}

// writeFixed writes bbolt's empty freelist (page 2) and the root leaf
// (page 3): empty, or naming the `key` bucket rooted at page root.
func (b *bulkLoader) writeFixed(root uint64) error {
	p := make([]byte, 2*b.pageSize)
	putHeader(p, freelistPage, freelistPageFlag, 0, 0)
	leaf := p[b.pageSize:]
	if root == 0 {
		putHeader(leaf, rootLeafPage, leafPageFlag, 0, 0)
	} else {
		putHeader(leaf, rootLeafPage, leafPageFlag, 1, 0)
		el := leaf[pageHeaderSize:]
		off := pageHeaderSize + elementSize
		binary.NativeEndian.PutUint32(el[0:], bucketLeafFlag)
		binary.NativeEndian.PutUint32(el[4:], uint32(off-pageHeaderSize))
		binary.NativeEndian.PutUint32(el[8:], uint32(len(KeyBucket)))
		binary.NativeEndian.PutUint32(el[12:], 16) // a bucket: root page, sequence
		off += copy(leaf[off:], KeyBucket)
		binary.NativeEndian.PutUint64(leaf[off:], root)
		binary.NativeEndian.PutUint64(leaf[off+8:], 0)
	}
	_, err := b.f.WriteAt(p, freelistPage*int64(b.pageSize))
	return err
}

// writeMetas overwrites both metas: root bucket at page 3, bbolt's empty
// freelist at page 2, the high-water mark after the last page written, and
// transaction ids 2 and 3 (page txid%2, as bbolt writes them).
func (b *bulkLoader) writeMetas() error {
	for txid := uint64(2); txid <= 3; txid++ {
		p := make([]byte, pageHeaderSize+metaChecksumOff+8)
		putHeader(p, txid%2, metaPageFlag, 0, 0)
		m := p[pageHeaderSize:]
		binary.NativeEndian.PutUint32(m[0:], boltMagic)
		binary.NativeEndian.PutUint32(m[4:], boltVersion)
		binary.NativeEndian.PutUint32(m[8:], uint32(b.pageSize))
		binary.NativeEndian.PutUint32(m[12:], 0) // flags
		binary.NativeEndian.PutUint64(m[16:], rootLeafPage)
		binary.NativeEndian.PutUint64(m[24:], 0) // root bucket's sequence
		binary.NativeEndian.PutUint64(m[32:], freelistPage)
		binary.NativeEndian.PutUint64(m[40:], b.next)
		binary.NativeEndian.PutUint64(m[48:], txid)
		h := fnv.New64a()
		h.Write(m[:metaChecksumOff])
		binary.NativeEndian.PutUint64(m[metaChecksumOff:], h.Sum64())
		if _, err := b.f.WriteAt(p, int64(txid%2)*int64(b.pageSize)); err != nil {
			return err
		}
	}
	return nil
}

// putHeader writes a page header.
func putHeader(p []byte, id uint64, flags uint16, count, overflow int) {
	binary.NativeEndian.PutUint64(p[0:], id)
	binary.NativeEndian.PutUint16(p[8:], flags)
	binary.NativeEndian.PutUint16(p[10:], uint16(count))
	binary.NativeEndian.PutUint32(p[12:], uint32(overflow))
}

// smallBuckets holds the entries of every bucket but `key` (meta,
// members, lease, auth ...: kilobytes to a few megabytes) until the end,
// when one bbolt transaction writes them. Later puts of a key win, as
// with bbolt's Put.
type smallBuckets map[string]map[string][]byte

func (s smallBuckets) create(name []byte) map[string][]byte {
	b, ok := s[string(name)]
	if !ok {
		b = map[string][]byte{}
		s[string(name)] = b
	}
	return b
}

func (s smallBuckets) put(name, k, v []byte) error {
	if len(k) == 0 {
		return fmt.Errorf("bucket %q: an empty key", name)
	}
	s.create(name)[string(k)] = bytes.Clone(v)
	return nil
}

package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/snapshift/snapshift/snapshot"
)

// The fuzz targets below run their seed corpus (and anything under testdata/fuzz/<Name>/) as
// normal tests; `go test -fuzz=FuzzName` explores further.

// FuzzParseRevisionKey: ParseRevisionKey never panics on any bytes; what it accepts is a 17- or
// 18-byte key that RevisionKey writes back byte for byte (plus the tombstone mark); and every
// valid revision's key parses back to itself.
func FuzzParseRevisionKey(f *testing.F) {
	for _, rev := range []snapshot.Revision{{Main: 1}, {Main: 42, Sub: 3}, {Main: math.MaxInt64, Sub: math.MaxInt64}, {Main: 1 << 40, Sub: 7}} {
		k := snapshot.RevisionKey(rev)
		f.Add(k)
		f.Add(append(bytes.Clone(k), 't'))
		f.Add(append(bytes.Clone(k), 'x'))
		f.Add(k[:16])
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 17))
	f.Add(snapshot.RevisionKey(snapshot.Revision{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		rev, tomb, err := snapshot.ParseRevisionKey(b)
		if !bytes.Equal(b, in) {
			t.Fatalf("ParseRevisionKey modified its input")
		}
		if err == nil {
			if len(b) != 17 && len(b) != 18 {
				t.Fatalf("ParseRevisionKey(%x) accepted a key of length %d", b, len(b))
			}
			if rev.Main < 1 || rev.Sub < 0 {
				t.Fatalf("ParseRevisionKey(%x) = %v: not a valid revision", b, rev)
			}
			if tomb != (len(b) == 18) {
				t.Fatalf("ParseRevisionKey(%x): tombstone %v", b, tomb)
			}
			if k := snapshot.RevisionKey(rev); !bytes.Equal(k, b[:17]) {
				t.Fatalf("ParseRevisionKey(%x) = %v, whose key is %x", b, rev, k)
			}
		} else if strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
		// The other direction: the first 16 bytes as a revision.
		if len(b) >= 16 {
			r := snapshot.Revision{Main: int64(binary.BigEndian.Uint64(b)), Sub: int64(binary.BigEndian.Uint64(b[8:]))}
			if r.Main >= 1 && r.Sub >= 0 {
				k := snapshot.RevisionKey(r)
				got, tomb, err := snapshot.ParseRevisionKey(k)
				if err != nil || tomb || got != r {
					t.Fatalf("RevisionKey(%v) = %x parses as %v %v %v", r, k, got, tomb, err)
				}
				got, tomb, err = snapshot.ParseRevisionKey(append(k, 't'))
				if err != nil || !tomb || got != r {
					t.Fatalf("tombstone key of %v parses as %v %v %v", r, got, tomb, err)
				}
			}
		}
	})
}

// TestRegressionParseRevisionKeyNegative: ParseRevisionKey promises not to panic (mvcc's own parser
// does, and a snapshot is untrusted input), but it used to call mvcc.BytesToBucketKey before
// checking for negative revisions, and that panics on them ("negative revision: main=-1 sub=0").
// Found by FuzzParseRevisionKey (testdata/fuzz/FuzzParseRevisionKey/3a5cd36e2820ad05).
func TestRegressionParseRevisionKeyNegative(t *testing.T) {
	for _, k := range [][]byte{
		append(append(bytes.Repeat([]byte{0xff}, 8), '_'), make([]byte, 8)...),                // main -1
		append(append([]byte{0, 0, 0, 0, 0, 0, 0, 1}, '_'), bytes.Repeat([]byte{0x80}, 8)...), // sub < 0
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("ParseRevisionKey(%x) panicked: %v", k, p)
				}
			}()
			if _, _, err := snapshot.ParseRevisionKey(k); err == nil || !strings.Contains(err.Error(), "negative") {
				t.Errorf("ParseRevisionKey(%x): %v, want an error about a negative revision", k, err)
			}
		}()
	}
}

// TestRegressionIndexRefusesKeysOutOfOrder: a corrupt `key` bucket whose keys are not in order
// (here one revision key with a flipped high bit: 0x10000000_00000024 between 35 and 37) is
// accepted by Index (snapshot/index.go, the cursor loop), which takes the last key it walks as the
// last revision. Then Get, a binary search, misses keys that Live walks (a rule's View sees a live
// object as absent), and CurrentRevision is below a revision in the file, so the changes would be
// written under it. Found by FuzzOpen (testdata/fuzz/FuzzOpen/f906bcc552cf9ddd). Fix: in Index,
// refuse a key not above the previous one (bytes.Compare) as an InputError ("the key bucket is out
// of order at revision X: the database is corrupt"); Validate and CheckKeys could do the same.
func TestRegressionIndexRefusesKeysOutOfOrder(t *testing.T) {
	data := smallSnapshot(t)
	db := bytes.Clone(data[:len(data)-sha256.Size])
	k := snapshot.RevisionKey(snapshot.Revision{Main: 36})
	at := bytes.Index(db, k)
	if at < 0 {
		t.Fatal("revision 36 not found in the small snapshot")
	}
	db[at] = 0x10 // main 0x1000000000000024, between 35 and 37
	p := filepath.Join(t.TempDir(), "in.db")
	if err := os.WriteFile(p, withTrailer(db), 0o400); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(p, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ix, err := s.Index(context.Background(), nil)
	if err == nil {
		t.Fatalf("Index accepted a key bucket out of order (last revision %v, current %d)", ix.LastRevision, ix.CurrentRevision)
	}
	if !errors.Is(err, snapshot.ErrInvalidInput) {
		t.Fatalf("Index: %v, want an error wrapping ErrInvalidInput", err)
	}
}

// TestRegressionParseKVFieldNumberOutOfRange: ParseKV used to accept a field number above 2^29-1
// (protowire.ConsumeTag does not check the upper bound), which proto.Unmarshal, and so etcd at
// boot, refuses: snapshift would have copied a KeyValue on which etcd stops. Found by FuzzParseKV
// (testdata/fuzz/FuzzParseKV/2da45f10b3ba1918).
func TestRegressionParseKVFieldNumberOutOfRange(t *testing.T) {
	b := []byte("\xf8\xff\xff\xff00") // field 1644167167, varint 0x30
	if err := proto.Unmarshal(b, &mvccpb.KeyValue{}); err == nil {
		t.Fatal("proto.Unmarshal accepts it: the case is moot")
	}
	if kv, err := snapshot.ParseKV(b); err == nil {
		t.Errorf("ParseKV(%x) = %+v, nil; want an error as proto.Unmarshal gives", b, kv)
	}
}

// FuzzParseKV: ParseKV never panics and agrees with proto.Unmarshal into mvccpb.KeyValue: the same
// inputs are accepted, with the same six field values. One difference is by design (and pinned by
// TestParseKVMatchesProtobuf): a known field (1-6) with another wire type is an error for
// ParseKV, while proto.Unmarshal keeps it as an unknown field and leaves the known one unset.
func FuzzParseKV(f *testing.F) {
	for _, kv := range []*mvccpb.KeyValue{
		{Key: []byte("/registry/pods/ns/a"), CreateRevision: 2, ModRevision: 9, Version: 3, Value: []byte("k8s\x00\x0a\x02hi"), Lease: 1 << 60},
		{Key: []byte("k")},
		{Key: []byte("k"), CreateRevision: -1, ModRevision: math.MaxInt64, Version: math.MinInt64, Lease: -5},
		{},
	} {
		b, err := proto.Marshal(kv)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(protowire.AppendVarint(protowire.AppendTag(bytes.Clone(b), 9, protowire.VarintType), 7)) // unknown field
		f.Add(protowire.AppendBytes(protowire.AppendTag(bytes.Clone(b), 1, protowire.BytesType), []byte("again")))
	}
	f.Add([]byte{0x0a, 0x05, 'a'})
	f.Add([]byte{0x10})
	f.Add([]byte{0x08, 0x01})
	f.Add(bytes.Repeat([]byte{0xff}, 11))
	f.Add([]byte{0x5b, 0x5c})                         // a group, field 11
	f.Add([]byte{0x0b, 0x0c})                         // a group in field 1
	f.Add([]byte{0x00, 0x00})                         // field 0
	f.Add([]byte{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00}) // field 2^29-1
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		got, err := snapshot.ParseKV(b)
		if !bytes.Equal(b, in) {
			t.Fatal("ParseKV modified its input")
		}
		var want mvccpb.KeyValue
		perr := proto.Unmarshal(b, &want)
		switch {
		case err == nil && perr != nil:
			t.Fatalf("ParseKV(%x) accepts what proto.Unmarshal refuses (%v): %+v", b, perr, got)
		case err != nil && perr == nil:
			if !strings.Contains(err.Error(), "has wire type") || !hasMistypedKnownField(b) || len(want.ProtoReflect().GetUnknown()) == 0 {
				t.Fatalf("ParseKV(%x) refuses (%v) what proto.Unmarshal accepts: %v", b, err, &want)
			}
		case err == nil:
			if !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) || got.CreateRevision != want.CreateRevision ||
				got.ModRevision != want.ModRevision || got.Version != want.Version || got.Lease != want.Lease {
				t.Fatalf("ParseKV(%x) = %+v, proto.Unmarshal = %v", b, got, &want)
			}
			if len(got.Key) > 0 && len(want.ProtoReflect().GetUnknown()) == 0 {
				// Marshal writes what etcd writes; it need not give b back (field order,
				// repeated fields), but it must parse back to the same values.
				m, err := got.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				again, err := snapshot.ParseKV(m)
				if err != nil || !bytes.Equal(again.Key, got.Key) || !bytes.Equal(again.Value, got.Value) || again.CreateRevision != got.CreateRevision ||
					again.ModRevision != got.ModRevision || again.Version != got.Version || again.Lease != got.Lease {
					t.Fatalf("Marshal(%+v) = %x parses as %+v, %v", got, m, again, err)
				}
			}
		}
	})
}

// hasMistypedKnownField reports whether b, read as protobuf up to its first malformed field, holds
// a field numbered 1-6 with a wire type other than the one KeyValue declares.
func hasMistypedKnownField(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num >= 1 && num <= 6 {
			want := protowire.VarintType
			if num == 1 || num == 5 {
				want = protowire.BytesType
			}
			if typ != want {
				return true
			}
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return false
}

// smallSnapshot writes a snapshot of a few keys with bbolt directly (the layout etcd writes:
// `key` and `meta` buckets, a tombstone, the compaction markers) and returns its bytes, trailer
// included. Small, so that fuzzing Open is fast.
func smallSnapshot(tb testing.TB) []byte {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "small.bolt")
	db, err := bolt.Open(p, 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		keys, err := tx.CreateBucket([]byte("key"))
		if err != nil {
			return err
		}
		for i := int64(2); i < 120; i++ {
			kv := snapshot.KV{Key: fmt.Appendf(nil, "/registry/configmaps/ns/cm-%d", i%7), Value: bytes.Repeat([]byte{byte(i)}, int(i)),
				CreateRevision: i, ModRevision: i, Version: 1}
			raw, err := kv.Marshal()
			if err != nil {
				return err
			}
			k := snapshot.RevisionKey(snapshot.Revision{Main: i})
			if i%11 == 0 {
				k, raw = append(k, 't'), []byte(mustMarshal(snapshot.KV{Key: kv.Key}))
			}
			if err := keys.Put(k, raw); err != nil {
				return err
			}
		}
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		for _, kv := range [][2][]byte{
			{[]byte("consistent_index"), binary.BigEndian.AppendUint64(nil, 50)},
			{[]byte("term"), binary.BigEndian.AppendUint64(nil, 2)},
			{[]byte("scheduledCompactRev"), snapshot.RevisionKey(snapshot.Revision{Main: 5})},
			{[]byte("finishedCompactRev"), snapshot.RevisionKey(snapshot.Revision{Main: 5})},
		} {
			if err := meta.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		_, err = tx.CreateBucket([]byte("lease"))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	var size int64
	db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return withTrailer(data[:size])
}

func mustMarshal(kv snapshot.KV) []byte {
	b, err := kv.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

// withTrailer returns db followed by its sha256.
func withTrailer(db []byte) []byte {
	sum := sha256.Sum256(db)
	return append(bytes.Clone(db), sum[:]...)
}

// checkChildEnv names the file TestCheckStructureChild checks.
const checkChildEnv = "SNAPSHOT_TEST_CHECK_STRUCTURE"

// TestCheckStructureChild is the child process of checkStructureInChild: it opens the file named
// by checkChildEnv and runs CheckStructure. In a normal test run it does nothing.
func TestCheckStructureChild(t *testing.T) {
	p := os.Getenv(checkChildEnv)
	if p == "" {
		return
	}
	s, err := snapshot.Open(p, snapshot.OpenOptions{AllowNoTrailer: true})
	if err != nil {
		fmt.Printf("open: %v\n", err)
		os.Exit(0)
	}
	problems, err := s.CheckStructure(5)
	fmt.Printf("CheckStructure: %d problems, error %v\n", len(problems), err)
	os.Exit(0)
}

// checkStructureInChild runs CheckStructure on path in a child process and fails if that
// crashes, or if it finds a corrupt file sound.
func checkStructureInChild(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckStructureChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), checkChildEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		first, _, _ := strings.Cut(string(out), "\n")
		t.Fatalf("CheckStructure crashed the process on a file whose pages Buckets found corrupt (%v): %s", err, first)
	}
	if !strings.Contains(string(out), "open: ") && strings.Contains(string(out), "0 problems, error <nil>") {
		t.Fatalf("CheckStructure found nothing wrong in a file whose pages Buckets found corrupt: %s", out)
	}
}

// fuzzing reports whether this process is a fuzzing worker (go test -fuzz).
func fuzzing() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// Modes of FuzzOpen: how the fuzzed bytes become a file (the low six bits
// of the mode, modulo openModes).
const (
	openAsIs       = iota // the bytes are the file
	openSkipHash          // the bytes are the file, opened with AllowNoTrailer
	openAddTrailer        // the bytes plus their sha256: reaches bbolt with a matching trailer
	openModes
)

// fuzzMode packs a file mode and a snapshot.HashMode (the top two bits) into
// FuzzOpen's mode byte.
func fuzzMode(file int, hash snapshot.HashMode) uint8 { return uint8(file) | uint8(hash)<<6 }

// unpackFuzzMode is the inverse of fuzzMode for any byte (a top-bits value
// of 3 is HashVerify again).
func unpackFuzzMode(mode uint8) (file int, hash snapshot.HashMode) {
	return int(mode&0x3f) % openModes, snapshot.HashMode((mode >> 6) % 3)
}

// FuzzOpen: Open, and every read a command makes after it (Buckets, Index, Live, Get, CheckKeys,
// CheckStructure, ForEachInBucket), never panic on any file contents, never modify the file, and
// fail only with an error that wraps ErrInvalidInput, on one line.
func FuzzOpen(f *testing.F) {
	sample, err := os.ReadFile("../testdata/sample.db")
	if err != nil {
		f.Fatal(err)
	}
	for _, d := range [][]byte{smallSnapshot(f), sample} {
		db := d[:len(d)-sha256.Size]
		flip := func(b []byte, at int) []byte { b = bytes.Clone(b); b[at] ^= 0xff; return b }
		f.Add(d, uint8(openAsIs))
		f.Add(d[:len(d)/2], uint8(openAsIs))
		f.Add(d[:len(d)-4096], uint8(openAsIs)) // a trailer-looking size
		f.Add(d[:len(d)-1], uint8(openAsIs))
		f.Add(flip(d, len(db)/2), uint8(openAsIs))
		f.Add(flip(d, len(d)-1), uint8(openAsIs))
		f.Add(db, uint8(openSkipHash))
		f.Add(db[:len(db)-4096], uint8(openSkipHash))
		f.Add(db, uint8(openAddTrailer))
		f.Add(db[:len(db)-4096], uint8(openAddTrailer))
		f.Add(flip(db, 4096+16), uint8(openAddTrailer))         // the second meta page's magic
		f.Add(d, fuzzMode(openAsIs, snapshot.HashInBackground)) // trailer checked in parallel
		f.Add(flip(d, len(db)/2), fuzzMode(openAsIs, snapshot.HashInBackground))
		f.Add(flip(d, len(db)/2), fuzzMode(openAsIs, snapshot.HashTrailerOnly)) // trailer read, not checked
		f.Add(db[:len(db)-4096], fuzzMode(openSkipHash, snapshot.HashTrailerOnly))
	}
	// Page damage behind a matching trailer, in the small snapshot (crashers found by fuzzing
	// are under testdata/fuzz/FuzzOpen).
	small := smallSnapshot(f)
	for _, at := range []int{2*4096 + 8, 3*4096 + 20, len(small) / 2} {
		db := bytes.Clone(small[:len(small)-sha256.Size])
		db[at] ^= 0x21
		f.Add(db, uint8(openAddTrailer))
	}
	f.Add([]byte{}, uint8(openAsIs))
	f.Add([]byte(strings.Repeat("apiVersion: v1\n", 40)), uint8(openSkipHash))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		file, hash := unpackFuzzMode(mode)
		if file == openAddTrailer {
			data = withTrailer(data)
		}
		p := filepath.Join(t.TempDir(), "in.db")
		if err := os.WriteFile(p, data, 0o400); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) bool {
			t.Helper()
			if err == nil {
				return true
			}
			if !errors.Is(err, snapshot.ErrInvalidInput) {
				t.Fatalf("%s: error %q does not wrap ErrInvalidInput", what, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s: multi-line error %q", what, err)
			}
			return false
		}
		defer func() {
			if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the input file changed (%v)", err)
			}
		}()
		s, err := snapshot.Open(p, snapshot.OpenOptions{AllowNoTrailer: file == openSkipHash, Hash: hash})
		if !check("Open", err) {
			return
		}
		defer s.Close()
		if hash == snapshot.HashTrailerOnly && s.HasTrailer && s.SHA256 != hex.EncodeToString(data[len(data)-sha256.Size:]) {
			t.Fatalf("SHA256 %s is not the trailer's value", s.SHA256)
		}
		if hash == snapshot.HashInBackground {
			// The trailer is checked in parallel with the reads (as transform does).
			defer func() {
				herr := s.WaitHash()
				check("WaitHash", herr)
				if herr == nil && file == openAsIs && len(data)%512 == sha256.Size {
					if sum := sha256.Sum256(data[:len(data)-sha256.Size]); !bytes.Equal(sum[:], data[len(data)-sha256.Size:]) {
						t.Fatal("WaitHash accepted a trailer that does not match")
					}
				}
			}()
		}
		_, err = s.Buckets()
		readable := check("Buckets", err)
		ix, err := s.Index(context.Background(), nil)
		if check("Index", err) {
			n := 0
			err = s.Live(context.Background(), ix, "fuzz", nil, func(e *snapshot.Entry) error {
				n++
				if _, ok, err := s.Get(e.Rev); !ok || err != nil {
					return fmt.Errorf("Get(%v) of a live entry: %v %v", e.Rev, ok, err)
				}
				return nil
			})
			check("Live", err)
			if err == nil && n != ix.LiveKeys {
				t.Fatalf("Live saw %d keys, Index counted %d", n, ix.LiveKeys)
			}
		}
		_, err = s.CheckKeys(context.Background(), 5)
		check("CheckKeys", err)
		if readable || fuzzing() {
			// While fuzzing, a crash of the worker process is caught and its input saved.
			_, err = s.CheckStructure(5)
			check("CheckStructure", err)
		} else {
			// Buckets read every page and found the structure corrupt: there bbolt's check can
			// panic in a goroutine of its own, which no recover reaches, and would take the whole
			// test binary down. Run it in a child.
			checkStructureInChild(t, p)
		}
		check("ForEachInBucket", s.ForEachInBucket([]byte("lease"), func(k, v []byte) error { return nil }))
		verr := s.Validate(context.Background())
		check("Validate", verr)
		if verr == nil && ix != nil && !readable {
			t.Fatal("Validate accepted a file whose pages Buckets found corrupt")
		}
	})
}

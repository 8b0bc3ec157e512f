package snapshot

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestIndexAgreesWithReference builds a snapshot with updates, deletes and
// re-creations, indexes it with the real hash and with degenerate hashes
// that make most keys collide, and compares every answer with a plain map
// of key strings built from the same bucket.
func TestIndexAgreesWithReference(t *testing.T) {
	ctx := context.Background()
	srv := etcdtest.StartT(t)
	put := func(k, v string) {
		if _, err := srv.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ {
		put(fmt.Sprintf("/registry/pods/ns/p%02d", i), "v1")
		put(fmt.Sprintf("/registry/services/specs/ns/s%02d", i%7), fmt.Sprint(i))
	}
	for i := 0; i < 60; i += 3 {
		if _, err := srv.Delete(ctx, fmt.Sprintf("/registry/pods/ns/p%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i += 9 {
		put(fmt.Sprintf("/registry/pods/ns/p%02d", i), "again") // a new generation
	}
	path := filepath.Join(t.TempDir(), "s.db")
	if err := srv.SaveSnapshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// The reference: newest revision per key string.
	ref := map[string]latest{}
	c := s.tx.Bucket(KeyBucket).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rev, tomb, _ := ParseRevisionKey(k)
		kv, _ := ParseKV(v)
		ref[string(kv.Key)] = latest{rev: rev, tomb: tomb}
	}
	live := 0
	for _, l := range ref {
		if !l.tomb {
			live++
		}
	}
	hashes := map[string]func([]byte) uint32{
		"maphash":        nil,
		"all collide":    func([]byte) uint32 { return 7 },
		"three buckets":  func(k []byte) uint32 { return uint32(len(k) % 3) },
		"by last letter": func(k []byte) uint32 { return uint32(k[len(k)-1]) },
	}
	for name, h := range hashes {
		for _, named := range [][]string{nil, {"/registry/services/"}} {
			t.Run(fmt.Sprintf("%s named=%v", name, named), func(t *testing.T) {
				counted := []string{"/registry/pods/", "/registry/services/specs/", "/none/"}
				ix, err := s.IndexWith(ctx, nil, IndexOptions{Named: named, Counted: counted, hash: h})
				if err != nil {
					t.Fatal(err)
				}
				if ix.LiveKeys != live {
					t.Errorf("LiveKeys %d, want %d", ix.LiveKeys, live)
				}
				for k, l := range ref {
					rev, ok := ix.Lookup([]byte(k))
					if ok != !l.tomb || (ok && rev != l.rev) {
						t.Errorf("Lookup(%s) = %v %v, want %v live=%v", k, rev, ok, l.rev, !l.tomb)
					}
				}
				for _, missing := range []string{"/registry/pods/ns/nope", "/x", "/registry/services/specs/ns/zz"} {
					if _, ok := ix.Lookup([]byte(missing)); ok {
						t.Errorf("Lookup(%s) found a key that does not exist", missing)
					}
				}
				for _, prefix := range []string{"/registry/pods/", "/registry/services/specs/", "/registry/", "/none/"} {
					var want []string
					for k, l := range ref {
						if !l.tomb && strings.HasPrefix(k, prefix) {
							want = append(want, k)
						}
					}
					sort.Strings(want)
					var got []string
					for _, kr := range ix.LiveKeysWithPrefix(prefix) {
						got = append(got, kr.Key)
						if kr.Rev != ref[kr.Key].rev {
							t.Errorf("%s listed at %v, want %v", kr.Key, kr.Rev, ref[kr.Key].rev)
						}
					}
					if !slices.Equal(got, want) {
						t.Errorf("LiveKeysWithPrefix(%s) = %d keys, want %d", prefix, len(got), len(want))
					}
					// Counted: the same number, of the deleted and re-created
					// keys too, without recording them.
					n, ok := ix.LiveCount(prefix)
					if ok != slices.Contains(counted, prefix) || (ok && n != len(want)) {
						t.Errorf("LiveCount(%s) = %d %v, want %d %v", prefix, n, ok, len(want), slices.Contains(counted, prefix))
					}
				}
				n := 0
				if err := s.Live(ctx, ix, "test", nil, func(e *Entry) error {
					n++
					if l := ref[string(e.KV.Key)]; l.tomb || l.rev != e.Rev {
						t.Errorf("Live yielded %s at %v, newest is %v (deleted %v)", e.KV.Key, e.Rev, l.rev, l.tomb)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if n != live {
					t.Errorf("Live yielded %d, want %d", n, live)
				}
			})
		}
	}
}

// TestPrefixSet: has answers as comparing every prefix does, for prefix
// lists with repeats, one prefix inside another, one that is all the
// others have in common, none; and keys around them.
func TestPrefixSet(t *testing.T) {
	lists := [][]string{
		nil,
		{"/registry/minions/"},
		{"/registry/minions/", "/registry/minions/", "/registry/services/specs/", "/registry/crd.projectcalico.org/ippools/", "/registry/configmaps/kube-system/kubeadm-config"},
		{"/registry/", "/registry/pods/"},
		{"/a", "/b", ""},
		{"/registry/services/", "/registry/services/specs/", "/registry/secrets/"},
	}
	keys := []string{"", "/", "/r", "/registry", "/registry/", "/registry/m", "/registry/minions", "/registry/minions/", "/registry/minions/cp1",
		"/registry/services/specs/default/kubernetes", "/registry/services/endpoints/x", "/registry/secrets/a", "/registry/crd.projectcalico.org/ippools/p",
		"/registry/configmaps/kube-system/kubeadm-config", "/registry/configmaps/kube-system/kubeadm-configx", "/registry/configmaps/kube-system/kubeadm",
		"/registry/pods/demo/p", "/a", "/ab", "/b/c", "/c", "x/registry/minions/"}
	for _, list := range lists {
		ps := newPrefixSet(list)
		for _, k := range keys {
			want := false
			for _, p := range list {
				want = want || strings.HasPrefix(k, p)
			}
			if got := ps.has([]byte(k)); got != want {
				t.Errorf("prefixes %q: has(%q) = %v, want %v", list, k, got, want)
			}
		}
	}
}

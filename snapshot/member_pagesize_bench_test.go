package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/snapshot"
)

// BenchmarkMemberPageSize is what a restored member's page size costs
// etcd's own writes afterwards: a real etcd member holding 20000 keys of
// 1 KiB, its database rewritten at each page size (bbolt's Compact, as a
// fused restore writes it), restarted, then updated one key at a time:
// "batched" as etcd commits its backend (every 100 ms), "sparse" with a
// commit after every put (a quiet cluster: each commit writes the dirty
// pages of one change). Reported: ns/op of a put, and commit-us/op, the
// backend commits' time (etcd_disk_backend_commit_duration_seconds,
// bbolt's page writes) per put.
func BenchmarkMemberPageSize(b *testing.B) {
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	for _, c := range []struct {
		mode string
		ps   int
	}{{"batched", 4096}, {"batched", snapshot.DefaultPageSize}, {"sparse", 4096}, {"sparse", snapshot.DefaultPageSize}} {
		ps := c.ps
		b.Run(fmt.Sprintf("%s/%d", c.mode, ps), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "member")
			srv, err := etcdtest.Start(b.Context(), etcdtest.Config{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 20000 {
				if _, err := srv.Put(b.Context(), fmt.Sprintf("/registry/pods/ns/pod-%05d", i), value); err != nil {
					b.Fatal(err)
				}
			}
			srv.Close()
			db := filepath.Join(dir, "member", "snap", "db")
			if err := rewritePageSize(db, ps); err != nil {
				b.Fatal(err)
			}
			srv, err = etcdtest.Start(b.Context(), etcdtest.Config{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			sum0, n0 := commitSeconds(b)
			i := 0
			for b.Loop() {
				if _, err := srv.Put(context.Background(), fmt.Sprintf("/registry/pods/ns/pod-%05d", i%20000), value); err != nil {
					b.Fatal(err)
				}
				if c.mode == "sparse" {
					srv.Etcd().Server.Backend().ForceCommit()
				}
				i++
			}
			sum1, n1 := commitSeconds(b)
			b.ReportMetric((sum1-sum0)*1e6/float64(i), "commit-us/op")
			b.ReportMetric(float64(n1-n0), "commits")
		})
	}
}

// rewritePageSize rewrites the bbolt database at path with pages of ps bytes.
func rewritePageSize(path string, ps int) error {
	src, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := bolt.Open(path+".new", 0o600, &bolt.Options{PageSize: ps, NoSync: true})
	if err != nil {
		return err
	}
	if err := bolt.Compact(dst, src, 8<<20); err != nil {
		dst.Close()
		return err
	}
	if got := dst.Info().PageSize; got != ps {
		return fmt.Errorf("page size %d, want %d", got, ps)
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

// commitSeconds is the sum and count of etcd's backend commit durations so far.
func commitSeconds(b *testing.B) (float64, uint64) {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "etcd_disk_backend_commit_duration_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleSum(), h.GetSampleCount()
		}
	}
	b.Fatal("etcd_disk_backend_commit_duration_seconds not registered")
	return 0, 0
}

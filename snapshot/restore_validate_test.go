package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/snapshot"
)

// TestRestoreValidateSpeaksTheFlags: every mismatch between the member's name, its peer URLs, the
// initial cluster and the directories that etcd's restore used to stop at in its own words
// ("len([...]) != len([...])", "resolved urls: ... != ...", "member exists with identical ID
// &{...}", "URL must not contain a path") is refused by Validate as an *option.Error naming the
// option to change, before anything is written; and the restore itself never runs for it.
func TestRestoreValidateSpeaksTheFlags(t *testing.T) {
	const u1, u2, u3 = "http://10.0.0.1:2380", "http://10.0.0.2:2380", "http://10.0.0.3:2380"
	for _, tc := range []struct {
		name   string
		cfg    snapshot.RestoreConfig // Name m1 and a data dir unless given
		walDir string                 // relative to the test's directory
		field  string
		want   string
	}{
		{"advertise URL other than the initial cluster's", snapshot.RestoreConfig{InitialCluster: "m1=" + u1, PeerURLs: []string{u2}},
			"", "PeerURLs", "{} " + u2 + " is not what {InitialCluster} lists for member m1 (" + u1 + "): give {} " + u1 + ", or change m1's entry in {InitialCluster}"},
		{"two advertise URLs, one in the initial cluster", snapshot.RestoreConfig{InitialCluster: "m1=" + u1, PeerURLs: []string{u1, u3}},
			"", "PeerURLs", "{} " + u1 + "," + u3 + " is not what {InitialCluster} lists for member m1 (" + u1 + ")"},
		{"two URLs in the initial cluster, one advertised", snapshot.RestoreConfig{InitialCluster: "m1=" + u1 + ",m1=" + u3, PeerURLs: []string{u1}},
			"", "PeerURLs", "give {} " + u1 + "," + u3},
		{"the default advertise URL with an initial cluster", snapshot.RestoreConfig{InitialCluster: "m1=" + u1},
			"", "PeerURLs", "{} http://localhost:2380 is not what {InitialCluster} lists for member m1"},
		{"a name the initial cluster does not have", snapshot.RestoreConfig{InitialCluster: "m2=" + u1, PeerURLs: []string{u1}},
			"", "InitialCluster", `{} "m2=` + u1 + `" does not name this member "m1": add m1=` + u1 + ` to {}, or give {Name} one of its members (m2)`},
		{"two members on one peer URL", snapshot.RestoreConfig{InitialCluster: "m1=" + u1 + ",m2=" + u1, PeerURLs: []string{u1}},
			"", "InitialCluster", "{} gives the peer URL " + u1 + " to both m1 and m2"},
		{"one member's URL twice", snapshot.RestoreConfig{InitialCluster: "m1=" + u1 + ",m1=" + u1, PeerURLs: []string{u1}},
			"", "InitialCluster", "{} lists m1=" + u1 + " twice"},
		{"an advertise URL twice", snapshot.RestoreConfig{InitialCluster: "m1=" + u1, PeerURLs: []string{u1, u1}},
			"", "PeerURLs", "{} lists " + u1 + " twice"},
		{"an empty initial cluster entry", snapshot.RestoreConfig{InitialCluster: "m1=" + u1 + ",,m2=" + u2, PeerURLs: []string{u1}},
			"", "InitialCluster", `"" is not NAME=PEER_URL`},
		{"a member without a URL", snapshot.RestoreConfig{InitialCluster: "m1", PeerURLs: []string{u1}},
			"", "InitialCluster", `"m1" is not NAME=PEER_URL`},
		{"a peer URL with a path", snapshot.RestoreConfig{InitialCluster: "m1=" + u1, PeerURLs: []string{u1 + "/"}},
			"", "PeerURLs", "is not a peer URL like https://10.0.0.11:2380"},
		{"a peer URL without a port", snapshot.RestoreConfig{InitialCluster: "m1=http://10.0.0.1", PeerURLs: []string{"http://10.0.0.1"}},
			"", "PeerURLs", "is not a peer URL like https://10.0.0.11:2380"},
		{"a host name against an address: no DNS, two URLs", snapshot.RestoreConfig{InitialCluster: "m1=http://cp1.invalid:2380", PeerURLs: []string{u1}},
			"", "PeerURLs", "is not what {InitialCluster} lists for member m1 (http://cp1.invalid:2380)"},
		{"a name with a comma", snapshot.RestoreConfig{Name: "m1,m2", InitialCluster: "m1=" + u1, PeerURLs: []string{u1}},
			"", "Name", `{} "m1,m2" cannot hold '=', ',' or spaces`},
		{"the WAL dir is the data dir", snapshot.RestoreConfig{}, "m1.etcd", "WALDir", "is the {DataDir} itself"},
		{"the WAL dir inside the data dir", snapshot.RestoreConfig{}, "m1.etcd/member/wal", "WALDir", "is inside the {DataDir}"},
		{"the data dir inside the WAL dir", snapshot.RestoreConfig{DataDir: "wal/m1.etcd"}, "wal", "DataDir", "is inside the {WALDir}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tc.cfg
			cfg.SnapshotPath = "../testdata/sample.db"
			if cfg.Name == "" {
				cfg.Name = "m1"
			}
			if cfg.DataDir == "" {
				cfg.DataDir = "m1.etcd"
			}
			cfg.DataDir = filepath.Join(dir, cfg.DataDir)
			if tc.walDir != "" {
				cfg.WALDir = filepath.Join(dir, tc.walDir)
			}
			err := cfg.Validate()
			var oe *option.Error
			if !errors.As(err, &oe) || oe.Field != tc.field || !strings.Contains(oe.Message, tc.want) {
				t.Fatalf("Validate: %v (%T), want an option error on %s saying %q", err, err, tc.field, tc.want)
			}
			if err := snapshot.Restore(context.Background(), cfg); !errors.As(err, &oe) {
				t.Errorf("Restore: %v, want the same refusal", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

// TestRestoreTokenIgnoresMemberOrder: the derived token of one snapshot and one initial cluster is
// the same however a member's command line orders or spaces the members, so members restored
// separately join one cluster; another layout gives another token.
func TestRestoreTokenIgnoresMemberOrder(t *testing.T) {
	token := func(initial, name, peer string) string {
		cfg := snapshot.RestoreConfig{SnapshotPath: "../testdata/sample.db", Name: name, DataDir: filepath.Join(t.TempDir(), "d"),
			InitialCluster: initial, PeerURLs: []string{peer}}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg.InitialClusterToken
	}
	a := token("m1=http://10.0.0.1:2380,m2=http://10.0.0.2:2380", "m1", "http://10.0.0.1:2380")
	b := token("m2=http://10.0.0.2:2380, m1=http://10.0.0.1:2380", "m2", "http://10.0.0.2:2380")
	c := token("m1=http://10.0.0.1:2380,m2=http://10.0.0.9:2380", "m1", "http://10.0.0.1:2380")
	if a != b || a == c || !strings.HasPrefix(a, snapshot.TokenPrefix) {
		t.Errorf("tokens: %s (m1's) and %s (m2's, members in another order) must agree; %s (another layout) must differ", a, b, c)
	}
}

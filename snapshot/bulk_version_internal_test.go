package snapshot

import (
	"os"
	"strings"
	"testing"
)

// TestBboltFormatVersion is the bulk loader's version guard: it writes
// bbolt's on-disk format by hand, as checked against bboltFormatVersion's
// sources, so go.mod moving to another bbolt (or replacing it) fails here
// until someone has re-checked them and updated bboltFormatVersion.
func TestBboltFormatVersion(t *testing.T) {
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require"))
		switch {
		case len(f) >= 2 && f[0] == "go.etcd.io/bbolt" && strings.HasPrefix(f[1], "v"):
			got = f[1]
		case strings.Contains(line, "go.etcd.io/bbolt") && strings.Contains(line, "=>"):
			t.Errorf("go.mod replaces go.etcd.io/bbolt (%s): the bulk loader's format was checked against bbolt %s only", strings.TrimSpace(line), bboltFormatVersion)
		}
	}
	if got == "" {
		t.Fatal("go.mod requires no go.etcd.io/bbolt")
	}
	if got != bboltFormatVersion {
		t.Errorf("go.mod requires go.etcd.io/bbolt %s, but the bulk loader's format (snapshot/bulk.go) was checked against %s: "+
			"re-check bbolt %s's internal/common (page.go: the page header, leaf and branch elements and flags; meta.go: "+
			"the meta and its checksum; inode.go; types.go: Version, Magic), db.go's init (the first four pages) and loadFreelist "+
			"and freepages (the empty freelist at page 2), and node.go's write against bulk.go's constants, writeLeaf, "+
			"writeBranch, writeFixed and writeMetas, run TestBulkLoader, FuzzBulkLoader and TestWritersAgree, then set "+
			"bboltFormatVersion to %s (meanwhile --writer bbolt writes through bbolt itself)", got, bboltFormatVersion, got, got)
	}
}

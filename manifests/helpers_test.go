package manifests

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	kubeadmIPv4 = "testdata/kubeadm-v1.36.3/ipv4"
	kubeadmIPv6 = "testdata/kubeadm-v1.36.3/ipv6-extra"
	handEdited  = "testdata/hand-edited"
)

// seedChanges is the sample migration (internal/sample): Service CIDR
// 192.168.0.0/16 -> 172.24.0.0/16, Pod CIDR 10.244.0.0/16 -> 10.55.0.0/16,
// and etcd restored as a new member on a new address and data dir.
func seedChanges() Changes {
	return Changes{
		ServiceCIDR: "172.24.0.0/16",
		PodCIDR:     "10.55.0.0/16",
		EtcdMember:  EtcdMember{Name: "cp1-r", PeerURL: "https://10.0.0.11:2380", ClientURL: "https://10.0.0.11:2379"},
		DataDir:     "/var/lib/etcd-restored",
	}
}

// copyDir copies the manifests of a testdata directory into a new
// temporary directory, mode 0600 as kubeadm writes them.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustRead(t *testing.T, dir string) *Set {
	t.Helper()
	set, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func mustGet(t *testing.T, set *Set, component string) *Manifest {
	t.Helper()
	m, err := set.Get(component)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustRender(t *testing.T, set *Set, component string) Rendering {
	t.Helper()
	r, err := mustGet(t, set, component).Render()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lineDiff is a line diff of a and b (longest common subsequence): the
// removed lines prefixed "-" and the added ones "+", in order, each run of
// removals before the additions that replace it.
func lineDiff(a, b string) []string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out, minus, plus []string
	flush := func() {
		out = append(append(out, minus...), plus...)
		minus, plus = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			flush()
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			plus = append(plus, "+"+y[j])
			j++
		default:
			minus = append(minus, "-"+x[i])
			i++
		}
	}
	flush()
	return out
}

// checkDiff fails unless the diff of a and b is exactly want.
func checkDiff(t *testing.T, name string, a, b []byte, want []string) {
	t.Helper()
	got := lineDiff(string(a), string(b))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: diff\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// golden compares data with testdata/<name>, rewriting it with -update.
func golden(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs from the golden file:\n%s", path, strings.Join(lineDiff(string(want), string(data)), "\n"))
	}
}

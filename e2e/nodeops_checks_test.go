//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// callField is a recorded call's field (etcd=, manifests=).
func callField(line, name string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// checkCallOrder asserts the order apply called the host in: the static
// pods stopped (crictl saw etcd or kube-apiserver running, then neither)
// before the kubelet stopped, with the manifests gone and the old etcd data
// dir still in place; the CNI's links deleted while the kubelet was
// stopped; the kubelet started with the new manifests and a new data dir.
func (c *nodeOpsCase) checkCallOrder(n *opsNode) {
	t := c.t
	lines := calls(t, n.root)
	stop, start := -1, -1
	for i, l := range lines {
		switch {
		case stop < 0 && strings.HasPrefix(l, "systemctl stop kubelet"):
			stop = i
		case stop >= 0 && start < 0 && strings.HasPrefix(l, "systemctl start kubelet"):
			start = i
		}
	}
	if stop < 0 || start < 0 {
		t.Fatalf("[nodeops] FAIL %s: no systemctl stop/start kubelet in %q", n.name, lines)
	}
	sawRunning := false
	last := map[string]string{}
	for _, l := range lines[:stop] {
		if name, ok := strings.CutPrefix(l, "crictl ps --name "); ok {
			comp, state, _ := strings.Cut(name, " | ")
			last[comp] = state
			sawRunning = sawRunning || state == "running"
		}
	}
	if !sawRunning || last["etcd"] != "none" || last["kube-apiserver"] != "none" {
		t.Errorf("[nodeops] FAIL %s: the kubelet was stopped before crictl showed etcd and kube-apiserver gone (waited: %v, last: %v)", n.name, sawRunning, last)
	}
	if got := callField(lines[stop], "etcd"); got != fmt.Sprint(n.etcdInode) || callField(lines[stop], "manifests") != "" {
		t.Errorf("[nodeops] FAIL %s: at systemctl stop kubelet the etcd dir was %s (old: %d), manifests %q", n.name, got, n.etcdInode, callField(lines[stop], "manifests"))
	}
	got := callField(lines[start], "etcd")
	if got == fmt.Sprint(n.etcdInode) || got == "absent" || !strings.Contains(callField(lines[start], "manifests"), "etcd.yaml") ||
		!strings.Contains(callField(lines[start], "manifests"), "kube-apiserver.yaml") {
		t.Errorf("[nodeops] FAIL %s: at systemctl start kubelet: %s", n.name, lines[start])
	}
	deleted := map[string]bool{}
	for _, l := range lines[stop:start] {
		if link, ok := strings.CutPrefix(l, "ip link delete "); ok {
			deleted[link] = true
		}
	}
	if !deleted["cni0"] || !deleted["flannel.1"] || deleted["eth0"] {
		t.Errorf("[nodeops] FAIL %s: flannel's links deleted between stop and start: %v", n.name, deleted)
	}
	t.Logf("[nodeops] PASS %s's recorded call order: %s", n.name, strings.Join(compact(lines[:start+1]), " → "))
}

// compact folds each run of crictl polls into one entry.
func compact(lines []string) []string {
	var out []string
	polls, state := 0, ""
	flush := func() {
		if polls > 0 {
			out = append(out, fmt.Sprintf("crictl ps --name etcd/kube-apiserver ×%d (%s)", polls, state))
			polls, state = 0, ""
		}
	}
	for _, l := range lines {
		if name, ok := strings.CutPrefix(l, "crictl ps --name "); ok {
			_, st, _ := strings.Cut(name, " | ")
			polls++
			if !strings.HasSuffix(state, st) {
				state = strings.TrimPrefix(state+" then "+st, " then ")
			}
			continue
		}
		flush()
		if i := strings.Index(l, " | etcd="); i > 0 {
			l = l[:i] + " [etcd dir inode " + callField(l, "etcd") + ", manifests " + strings.TrimSuffix(callField(l, "manifests"), ",") + "]"
		}
		out = append(out, l)
	}
	flush()
	return out
}

// checkInstalled checks what apply left on node n.
func (c *nodeOpsCase) checkInstalled(n *opsNode) {
	t := c.t
	r := func(p string) string { return filepath.Join(n.root, p) }
	for p, want := range map[string]os.FileMode{"etc/kubernetes/pki/ca.key": 0o600, "etc/kubernetes/pki/ca.crt": 0o644,
		"etc/kubernetes/pki/etcd/server.key": 0o600, "etc/kubernetes/manifests/etcd.yaml": 0o600, "etc/kubernetes/admin.conf": 0o600,
		"var/lib/etcd": os.ModeDir | 0o700} {
		info, err := os.Stat(r(p))
		if err != nil || info.Mode() != want {
			t.Errorf("[nodeops] FAIL %s: %s: %v, mode %v, want %v", n.name, p, err, info.Mode(), want)
			continue
		}
		if st := info.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && (st.Uid != 0 || st.Gid != 0) {
			t.Errorf("[nodeops] FAIL %s: %s owned by %d:%d", n.name, p, st.Uid, st.Gid)
		}
	}
	clientCerts, _ := filepath.Glob(r("var/lib/kubelet/pki/kubelet-client-*.pem"))
	if c.newCA != (len(clientCerts) == 0) {
		t.Errorf("[nodeops] FAIL %s: new CA %v, kubelet client certificates left: %v", n.name, c.newCA, clientCerts)
	}
	if _, err := os.Stat(r("var/lib/kubelet/pki/kubelet.crt")); err != nil {
		t.Errorf("[nodeops] FAIL %s: the kubelet's serving certificate went: %v", n.name, err)
	}
	cfg, _ := os.ReadFile(r("var/lib/kubelet/config.yaml"))
	if !strings.Contains(string(cfg), "clusterDNS:\n- 172.24.0.10\n") || !strings.Contains(string(cfg), "staticPodPath: /etc/kubernetes/manifests") {
		t.Errorf("[nodeops] FAIL %s: kubelet config.yaml:\n%s", n.name, cfg)
	}
	if _, err := os.Stat(r("run/flannel/subnet.env")); err == nil {
		t.Errorf("[nodeops] FAIL %s: /run/flannel/subnet.env is still there", n.name)
	}
	t.Logf("[nodeops] PASS %s: files installed root-owned with kubeadm's modes (keys, kubeconfigs, manifests 0600, certificates 0644, etcd dir 0700); clusterDNS 172.24.0.10; flannel's subnet.env, cni0 and flannel.1 gone; kubelet client certificates moved aside: %v", n.name, c.newCA)
}

// checkRolledBack checks the nodes after rollback: every original file
// byte for byte, the old etcd data dir itself, and the old cluster serving
// the old revision (the write made after the snapshot included).
func (c *nodeOpsCase) checkRolledBack(ctx context.Context, oldRev int64) {
	t := c.t
	for _, n := range c.ns {
		now := treeState(t, n.root, "etc/kubernetes", "var/lib/kubelet")
		var diff []string
		for p, v := range n.before {
			if now[p] != v {
				diff = append(diff, fmt.Sprintf("%s: %q, was %q", p, now[p], v))
			}
		}
		for p := range now {
			if _, ok := n.before[p]; !ok {
				diff = append(diff, p+": new")
			}
		}
		sort.Strings(diff)
		if len(diff) > 0 {
			t.Errorf("[nodeops] FAIL %s after rollback:\n%s", n.name, strings.Join(diff, "\n"))
		}
		if got := inode(t, filepath.Join(n.root, "var/lib/etcd")); got != n.etcdInode {
			t.Errorf("[nodeops] FAIL %s: /var/lib/etcd is inode %d, the old data dir was %d", n.name, got, n.etcdInode)
		}
	}
	t.Logf("[nodeops] PASS rollback: /etc/kubernetes and /var/lib/kubelet byte for byte as before (%d paths each, modes, owners, symlinks), /var/lib/etcd is the old data dir itself", len(c.ns[0].before))
	c.waitReady(ctx, "rolled-back")
	cli := c.etcdClient(c.ns[0])
	resp, err := cli.Get(ctx, "/registry/configmaps/default/after-snapshot")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("[nodeops] FAIL the old etcd does not serve the write made after the snapshot: %v", err)
	}
	if rev := resp.Header.Revision; rev < oldRev || rev > oldRev+100000 {
		t.Fatalf("[nodeops] FAIL the old etcd is at revision %d, the old cluster was at %d", rev, oldRev)
	}
	if _, err := c.client(c.ns[0]).CoreV1().ConfigMaps("default").Get(ctx, "after-snapshot", metav1.GetOptions{}); err != nil {
		t.Fatalf("[nodeops] FAIL the old kube-apiserver: %v", err)
	}
	t.Logf("[nodeops] PASS the old etcd members, started by the fake kubelet from the restored manifests, serve the old revision (%d, snapshot at %d) with the write made after the snapshot; the old kube-apiserver answers to the old admin.conf", resp.Header.Revision, oldRev)
}

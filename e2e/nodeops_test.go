//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/cmd/snapshift/app"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/nodeops"
	"github.com/snapshift/snapshift/rebuild"
)

// TestNodeApplyRollback proves `snapshift node apply` and `snapshift node
// rollback` by running them (DESIGN decision 22). For one and three
// control-plane nodes, with a new CA and with the old CA reused:
//
//  1. an old cluster: a kubeadm-shaped node per root directory (what a
//     rebuild with unchanged networks lays out, copied into place by hand,
//     plus the kubelet's config.yaml and rotated client certificates and
//     flannel's host state), run by the fake kubelet: real etcd members and
//     real kube-apiservers from its manifests; a snapshot of it, then one
//     more write (which the migration must lose);
//  2. `snapshift rebuild` of that snapshot onto new service and pod ranges;
//  3. `snapshift node apply` on every node at once (the real binary, the
//     recorders first in PATH): its own health gates pass against the real
//     etcd members and kube-apiservers the fake kubelet starts from exactly
//     the files it installed; the test then checks the recorded call order,
//     modes, the members' cluster, /readyz, kubelet.conf's identity, the
//     moved kubelet client certificates, and that a second apply changes
//     nothing;
//  4. `snapshift node rollback` on every node at once: every original file
//     byte for byte, the old etcd data dir (same inode) back, and the old
//     cluster, restarted by its own manifests, serves the old revision with
//     the write made after the snapshot.
func TestNodeApplyRollback(t *testing.T) {
	ver := versions()[0]
	bins := map[string]string{"etcd": etcdBinary(t), "kube-apiserver": filepath.Join(binDir(t, ver), "kube-apiserver")}
	snapshift := buildSnapshift(t)
	src := nodeOpsSource(t, binDir(t, ver))
	for _, tc := range []struct {
		nodes    int
		newCA    bool
		deadline bool // apply --rollback-after, rolled back by what its timer runs
	}{{1, true, false}, {3, false, false}, {1, false, false}, {3, true, true}} {
		ca := "reused-CA"
		if tc.newCA {
			ca = "new-CA"
		}
		if tc.deadline {
			ca += "/deadline"
		}
		t.Run(fmt.Sprintf("%d-node/%s", tc.nodes, ca), func(t *testing.T) {
			c := &nodeOpsCase{t: t, nodes: tc.nodes, newCA: tc.newCA, deadline: tc.deadline, bins: bins, snapshift: snapshift, ver: ver}
			c.run(src)
		})
	}
}

// etcdBinary is the etcd server hack/build-etcd.sh built.
func etcdBinary(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("SNAPSHIFT_E2E_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "snapshift-e2e")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "go.etcd.io/etcd/server/v3").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	p := filepath.Join(cache, "etcd-"+strings.TrimSpace(string(out)), "etcd")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("etcd not built: run hack/build-etcd.sh (make e2e does): %v", err)
	}
	return p
}

// buildSnapshift builds the CLI: apply runs as the operator runs it, one
// process per node with that node's PATH.
func buildSnapshift(t *testing.T) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	out := filepath.Join(t.TempDir(), "snapshift")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/snapshift")
	cmd.Dir = filepath.Join(filepath.Dir(self), "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// nodeOpsSource is the snapshot the old clusters are made from: populate's
// kubeadm-like state plus flannel's DaemonSet with the upstream labels.
func nodeOpsSource(t *testing.T, bin string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)
	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, newPKI(t, dir), oldServiceCIDR, logDir)
	populate(ctx, t, api.client, api)
	// kube-flannel.yml's DaemonSet labels and selector (flannel-io/flannel
	// Documentation/kube-flannel.yml: app: flannel, k8s-app: flannel).
	labels := map[string]string{"app": "flannel", "k8s-app": "flannel"}
	_, err := api.client.AppsV1().DaemonSets("kube-flannel").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-flannel-ds", Labels: map[string]string{"app": "flannel", "k8s-app": "flannel", "tier": "node"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "flannel", "k8s-app": "flannel", "tier": "node"}},
			Spec:       corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "kube-flannel", Image: "ghcr.io/flannel-io/flannel:v0.28.1"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()
	return snap
}

// nodeOpsCase is one run of the proof.
type nodeOpsCase struct {
	t         *testing.T
	nodes     int
	newCA     bool
	deadline  bool
	enter     []string // a command that runs snapshift's (nsenter into a systemd's namespaces), or nil
	bins      map[string]string
	snapshift string
	ver       string
	dir       string
	logDir    string
	ns        []*opsNode
}

// opsNode is one control-plane node under test.
type opsNode struct {
	name, member, addr string
	root, path         string // path: PATH with the recorders first
	kubelet            *fakeKubelet
	etcdInode          uint64
	before             map[string]string // the original files, by path under the root
}

func (c *nodeOpsCase) run(source string) {
	t := c.t
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bundle, oldRev := c.prepare(ctx, source)

	// 3. Apply, on every node at once, its gates against the real servers.
	start := time.Now()
	apply, rollback := "apply", "rollback"
	if c.deadline {
		// The deadline's timer (a systemd-run recorder here) is armed at
		// apply; at the deadline it runs rollback-if-unconfirmed, run
		// here on every node at once as the timers would.
		apply, rollback = "apply --rollback-after 1h", "rollback-if-unconfirmed"
	}
	if c.nodes > 1 && !c.newCA {
		c.checkPeerRefusal(ctx, apply, bundle)
	}
	// The runbook's two phases: every old member stopped, then the
	// restored ones started.
	c.all(ctx, apply+" --stop-only", bundle)
	c.all(ctx, apply, bundle)
	t.Logf("[nodeops] PASS snapshift node apply on %d nodes at once: exit 0 after its own health gates (etcd member list and health, kube-apiserver /readyz) passed against the real etcd members and kube-apiservers started from the installed files (%s)", c.nodes, time.Since(start).Round(time.Second))
	c.checkApplied(ctx, bundle)

	// 4. Rollback, on every node at once.
	if c.deadline {
		for _, n := range c.ns {
			lines := calls(t, n.root)
			i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "systemd-run --unit=snapshift-rollback-"+n.name+" ") })
			if i < 0 || !strings.Contains(lines[i], " node rollback-if-unconfirmed --bundle "+bundle+" --node "+n.name+" --root "+n.root+" --timeout 4m0s") {
				t.Errorf("[nodeops] FAIL %s: apply --rollback-after did not arm the timer: %q", n.name, lines)
			}
		}
	}
	start = time.Now()
	c.all(ctx, rollback, bundle)
	t.Logf("[nodeops] PASS snapshift node %s on %d nodes at once: exit 0 after its health gates passed against the old etcd and kube-apiservers (%s)", rollback, c.nodes, time.Since(start).Round(time.Second))
	c.checkRolledBack(ctx, oldRev)
}

// checkPeerRefusal applies the bundle on the first node alone while the
// other nodes' old etcd members run, with a CA that accepts the bundle's
// certificates (issue 45): apply must refuse before it starts the kubelet,
// naming the second node and the old cluster, exit 4.
func (c *nodeOpsCase) checkPeerRefusal(ctx context.Context, apply, bundle string) {
	t := c.t
	n := c.ns[0]
	out, err := c.node(ctx, n, apply, bundle)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != app.ExitRefused {
		t.Fatalf("[nodeops] FAIL apply on %s beside running old members: %v, want exit %d\n%s", n.name, err, app.ExitRefused, out)
	}
	want := "on " + c.ns[1].name + " still runs as a member of cluster "
	if !strings.Contains(out, want) || !strings.Contains(out, "(the old cluster") {
		t.Fatalf("[nodeops] FAIL the refusal does not say %q:\n%s", want, out)
	}
	for _, l := range calls(t, n.root) {
		if strings.HasPrefix(l, "systemctl start") {
			t.Fatalf("[nodeops] FAIL the refused apply started the kubelet: %q", l)
		}
	}
	t.Logf("[nodeops] PASS apply on %s alone, beside the old members, is refused before its kubelet starts:\n%s", n.name, lastLines(out, 2))
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// prepare is steps 1 and 2: the old cluster running on the case's nodes,
// and the bundle of its snapshot; it returns the bundle and the old
// cluster's revision at the snapshot.
func (c *nodeOpsCase) prepare(ctx context.Context, source string) (string, int64) {
	t := c.t
	c.dir = t.TempDir()
	c.logDir = filepath.Join(c.dir, "logs")
	os.MkdirAll(c.logDir, 0o755)
	for i := 1; i <= c.nodes; i++ {
		c.ns = append(c.ns, &opsNode{name: fmt.Sprintf("cp-%d", i), member: fmt.Sprintf("e-%d", i), addr: fmt.Sprintf("127.0.22.%d", i),
			root: filepath.Join(c.dir, fmt.Sprintf("root-%d", i))})
	}

	// 1. The old cluster, running.
	old := c.rebuild("old", source, oldServiceCIDR, oldPodCIDR, "")
	for _, n := range c.ns {
		c.installOld(old, n)
		n.kubelet = startFakeKubelet(t, n.name, n.root, n.addr, c.logDir, c.bins)
	}
	c.waitReady(ctx, "old")
	oldClient := c.client(c.ns[0])
	mark(ctx, t, oldClient, "before-snapshot")
	snap, oldRev := c.snapshot(ctx)
	mark(ctx, t, oldClient, "after-snapshot")
	t.Logf("[nodeops] PASS the old cluster runs (%d etcd members, %d kube-apiservers) from its manifests; snapshot at revision %d", c.nodes, c.nodes, oldRev)

	// 2. The bundle.
	pkiSource := ""
	if !c.newCA {
		pkiSource = filepath.Join(c.ns[0].root, "etc", "kubernetes", "pki")
	}
	bundle := c.rebuild("new", snap, newServiceCIDR, newPodCIDR, pkiSource)
	c.checkRunbook(bundle)
	for _, n := range c.ns {
		n.before = treeState(t, n.root, "etc/kubernetes", "var/lib/kubelet")
		n.etcdInode = inode(t, filepath.Join(n.root, "var/lib/etcd"))
	}
	return bundle, oldRev
}

// rebuild runs `snapshift rebuild` for the case's nodes.
func (c *nodeOpsCase) rebuild(name, snap, svc, pod, pkiSource string) string {
	t := c.t
	out := filepath.Join(c.dir, "bundle-"+name)
	var members []string
	for _, n := range c.ns {
		members = append(members, fmt.Sprintf("  - {name: %s, nodeName: %s, advertiseAddress: %s, peerURL: \"https://%s:2380\", clientURL: \"https://%s:2379\"}", n.member, n.name, n.addr, n.addr, n.addr))
	}
	pkiBlock := ""
	if pkiSource != "" {
		pkiBlock = fmt.Sprintf("pki: {source: %s, nodeName: %s}\n", pkiSource, c.ns[0].name)
	}
	cfg := filepath.Join(c.dir, "rebuild-"+name+".yaml")
	write(t, cfg, []byte(fmt.Sprintf(`apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: %s
output: %s
networking: {serviceSubnet: %s, podSubnet: %s}
etcd:
  members:
%s
%smanifests: {kubernetesVersion: %s}
`, snap, out, svc, pod, strings.Join(members, "\n"), pkiBlock, c.ver)), 0o600)
	run(t, "rebuild", "--config", cfg, "--quiet")
	return out
}

// installOld lays a node out as kubeadm would have: the old bundle's
// kubernetes/<node>/ as /etc/kubernetes, its member as /var/lib/etcd, the
// kubelet's config.yaml (clusterDNS in the old range) and its rotated
// client certificate (kubelet-client-current.pem, a symlink, as the kubelet
// writes it), and flannel's host state.
func (c *nodeOpsCase) installOld(bundle string, n *opsNode) {
	t := c.t
	if err := copyDirAs(filepath.Join(bundle, "kubernetes", n.name), filepath.Join(n.root, "etc", "kubernetes")); err != nil {
		t.Fatal(err)
	}
	if err := copyDirAs(filepath.Join(bundle, "etcd", n.member), filepath.Join(n.root, "var", "lib", "etcd")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(n.root, "var", "lib", "etcd"), 0o700)
	pkiDir := filepath.Join(n.root, "var", "lib", "kubelet", "pki")
	os.MkdirAll(pkiDir, 0o755)
	write(t, filepath.Join(n.root, "var", "lib", "kubelet", "config.yaml"), []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nauthentication:\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\nclusterDNS:\n- 192.168.0.10\nclusterDomain: cluster.local\nrotateCertificates: true\nstaticPodPath: /etc/kubernetes/manifests\n"), 0o644)
	kc, err := clientcmd.LoadFromFile(filepath.Join(n.root, "etc", "kubernetes", "kubelet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		write(t, filepath.Join(pkiDir, "kubelet-client-2026-01-02-03-04-05.pem"), append(append([]byte{}, a.ClientCertificateData...), a.ClientKeyData...), 0o600)
	}
	if err := os.Symlink("/var/lib/kubelet/pki/kubelet-client-2026-01-02-03-04-05.pem", filepath.Join(pkiDir, "kubelet-client-current.pem")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(pkiDir, "kubelet.crt"), []byte("kubelet serving certificate (self-signed by the kubelet)\n"), 0o644)
	write(t, filepath.Join(pkiDir, "kubelet.key"), []byte("kubelet serving key\n"), 0o600)
	os.MkdirAll(filepath.Join(n.root, "run", "flannel"), 0o755)
	write(t, filepath.Join(n.root, "run", "flannel", "subnet.env"), []byte("FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\n"), 0o644)
	n.path = writeRecorders(t, n.root, []string{"eth0", "cni0", "flannel.1"}) + ":" + os.Getenv("PATH")
	write(t, filepath.Join(n.root, "recorder", "kubelet.active"), nil, 0o644)
}

// copyDirAs copies a bundle directory into place with kubeadm's modes.
func copyDirAs(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o600)
		if strings.HasSuffix(p, ".crt") || strings.HasSuffix(p, ".pub") {
			mode = 0o644
		}
		return os.WriteFile(target, b, mode)
	})
}

// all runs `snapshift node <verb>` on every node at once, each with its
// root and its PATH, and fails unless every one exits 0.
func (c *nodeOpsCase) all(ctx context.Context, verb, bundle string) {
	t := c.t
	var wg sync.WaitGroup
	outs := make([]string, len(c.ns))
	errs := make([]error, len(c.ns))
	for i, n := range c.ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = c.node(ctx, n, verb, bundle)
		}()
	}
	wg.Wait()
	for i, n := range c.ns {
		if errs[i] != nil {
			c.dumpLogs()
			t.Fatalf("[nodeops] FAIL snapshift node %s on %s: %v\n%s", verb, n.name, errs[i], outs[i])
		}
		t.Logf("snapshift node %s on %s:\n%s", verb, n.name, outs[i])
	}
}

func (c *nodeOpsCase) node(ctx context.Context, n *opsNode, verb, bundle string) (string, error) {
	args := append(append([]string{c.snapshift, "node"}, strings.Fields(verb)...), "--bundle", bundle, "--node", n.name, "--root", n.root)
	if verb != "confirm" { // confirm waits for nothing
		args = append(args, "--timeout", "4m")
	}
	if c.enter != nil {
		args = append(slices.Clone(c.enter), args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+n.path)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// dumpLogs prints the tail of every component log.
func (c *nodeOpsCase) dumpLogs() {
	logs, _ := filepath.Glob(filepath.Join(c.logDir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		c.t.Logf("---- %s ----\n%s", filepath.Base(l), b)
	}
}

// client is a client of node n's kube-apiserver as the installed
// super-admin.conf's user (system:masters: the snapshot, made through a
// token, has no binding for kubeadm's cluster-admins group that admin.conf's
// user is in; /readyz needs none).
func (c *nodeOpsCase) client(n *opsNode) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(c.restConfig(n, "super-admin.conf"))
}

// restConfig is node n's kubeconfig file, pointed at n's kube-apiserver,
// its file references under n's root.
func (c *nodeOpsCase) restConfig(n *opsNode, file string) *rest.Config {
	t := c.t
	kc, err := clientcmd.LoadFromFile(filepath.Join(n.root, "etc", "kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + n.addr + ":6443"
		if cl.CertificateAuthority != "" {
			cl.CertificateAuthority = filepath.Join(n.root, cl.CertificateAuthority)
		}
	}
	for _, a := range kc.AuthInfos {
		if a.ClientCertificate != "" {
			a.ClientCertificate, a.ClientKey = filepath.Join(n.root, a.ClientCertificate), filepath.Join(n.root, a.ClientKey)
		}
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 20 * time.Second
	return cfg
}

// waitReady waits until every node's kube-apiserver answers /readyz.
func (c *nodeOpsCase) waitReady(ctx context.Context, what string) {
	for _, n := range c.ns {
		hc, err := rest.HTTPClientFor(c.restConfig(n, "admin.conf"))
		if err != nil {
			c.t.Fatal(err)
		}
		deadline := time.Now().Add(4 * time.Minute)
		for {
			resp, err := hc.Get("https://" + n.addr + ":6443/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				c.dumpLogs()
				c.t.Fatalf("[nodeops] FAIL the %s kube-apiserver of %s is not ready: %v", what, n.name, err)
			}
			time.Sleep(time.Second)
		}
	}
}

// etcdClient talks to node n's etcd member with its healthcheck-client
// certificate.
func (c *nodeOpsCase) etcdClient(n *opsNode) *clientv3.Client {
	pki := filepath.Join(n.root, "etc", "kubernetes", "pki", "etcd")
	tlsConfig, err := transport.TLSInfo{CertFile: filepath.Join(pki, "healthcheck-client.crt"), KeyFile: filepath.Join(pki, "healthcheck-client.key"),
		TrustedCAFile: filepath.Join(pki, "ca.crt")}.ClientConfig()
	if err != nil {
		c.t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + n.addr + ":2379"}, TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// snapshot saves node 1's etcd as etcdctl snapshot save does.
func (c *nodeOpsCase) snapshot(ctx context.Context) (string, int64) {
	t := c.t
	cli := c.etcdClient(c.ns[0])
	resp, err := cli.Get(ctx, "health")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	p := filepath.Join(c.dir, "old-cluster.db")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p, resp.Header.Revision
}

// mark writes a ConfigMap named name in default.
func mark(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// treeState is every file, directory and symlink under root/dirs: its
// mode, owner and content hash (or link target).
func treeState(t *testing.T, root string, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			st := info.Sys().(*syscall.Stat_t)
			v := fmt.Sprintf("%v %d:%d", info.Mode(), st.Uid, st.Gid)
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				l, _ := os.Readlink(p)
				v += " -> " + l
			case info.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				v += " " + hex.EncodeToString(sum[:])
			}
			rel, _ := filepath.Rel(root, p)
			out[rel] = v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

// checkRunbook: the bundle's report and runbook for this cluster.
func (c *nodeOpsCase) checkRunbook(dir string) {
	t := c.t
	rb, err := os.ReadFile(filepath.Join(dir, bundle.RunbookFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kubectl -n kube-flannel rollout restart ds/kube-flannel-ds", "-l 'app=flannel,k8s-app=flannel'",
		"snapshift node apply --bundle /root/snapshift-bundle --node " + c.ns[len(c.ns)-1].name, "snapshift node rollback"} {
		if !strings.Contains(string(rb), want) {
			t.Errorf("[nodeops] FAIL RUNBOOK.md does not say %q", want)
		}
	}
	var rep rebuild.Report
	b, _ := os.ReadFile(filepath.Join(dir, bundle.ReportFile))
	if err := json.Unmarshal(b, &rep); err != nil || rep.Provenance == nil || rep.Provenance.ConfigSHA256 == "" || rep.Operation == nil || !slices.Contains(rep.Operation.CNI, "flannel") {
		t.Fatalf("[nodeops] FAIL report.json's provenance/operation: %v %+v", err, rep.Provenance)
	}
}

// checkApplied checks the nodes after apply.
func (c *nodeOpsCase) checkApplied(ctx context.Context, bundle string) {
	t := c.t
	for _, n := range c.ns {
		c.checkCallOrder(n)
		c.checkInstalled(n)
	}
	// The members form one cluster, seen from every node.
	for _, n := range c.ns {
		ml, err := c.etcdClient(n).MemberList(ctx)
		if err != nil || len(ml.Members) != c.nodes {
			t.Fatalf("[nodeops] FAIL %s's etcd member list: %v (%d members)", n.name, err, len(ml.Members))
		}
	}
	t.Logf("[nodeops] PASS the %d etcd members started from the installed manifests form one cluster", c.nodes)
	c.waitReady(ctx, "new")
	for _, n := range c.ns {
		review, err := kubernetes.NewForConfigOrDie(c.restConfig(n, "kubelet.conf")).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil || review.Status.UserInfo.Username != "system:node:"+n.name {
			t.Fatalf("[nodeops] FAIL %s's installed kubelet.conf: %v %+v", n.name, err, review)
		}
	}
	t.Logf("[nodeops] PASS every node's kube-apiserver answers /readyz to the installed admin.conf; every installed kubelet.conf authenticates as system:node:<node>")
	cl := c.client(c.ns[0])
	svc, err := cl.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || !netip.MustParsePrefix(newServiceCIDR).Contains(netip.MustParseAddr(svc.Spec.ClusterIP)) {
		t.Fatalf("[nodeops] FAIL the kubernetes Service: %v", err)
	}
	if _, err := cl.CoreV1().ConfigMaps("default").Get(ctx, "before-snapshot", metav1.GetOptions{}); err != nil {
		t.Fatalf("[nodeops] FAIL the migrated cluster lost a write made before the snapshot: %v", err)
	}
	if _, err := cl.CoreV1().ConfigMaps("default").Get(ctx, "after-snapshot", metav1.GetOptions{}); err == nil {
		t.Fatalf("[nodeops] FAIL a write made after the snapshot survived the migration?")
	}
	t.Logf("[nodeops] PASS the migrated cluster serves the new ranges; the write made after the snapshot is gone, as RUNBOOK.md warns")
	c.checkIdempotent(ctx, bundle)
}

// checkIdempotent runs apply again on the first node: it must pass and
// change nothing (no second backup, no second stop).
func (c *nodeOpsCase) checkIdempotent(ctx context.Context, bundle string) {
	t := c.t
	n := c.ns[0]
	recs, _ := filepath.Glob(filepath.Join(n.root, "var", "lib", "snapshift", "backup", "*", nodeops.RecordFile))
	if len(recs) != 1 {
		t.Fatalf("[nodeops] FAIL %d backup records", len(recs))
	}
	before, _ := os.ReadFile(recs[0])
	state := treeState(t, n.root, "etc/kubernetes")
	nCalls := len(calls(t, n.root))
	out, err := c.node(ctx, n, "apply", bundle)
	if err != nil {
		t.Fatalf("[nodeops] FAIL a second apply: %v\n%s", err, out)
	}
	after, _ := os.ReadFile(recs[0])
	again := calls(t, n.root)[nCalls:]
	for _, l := range again {
		if strings.HasPrefix(l, "systemctl stop") || strings.HasPrefix(l, "ip link delete") {
			t.Errorf("[nodeops] FAIL the second apply ran %q", l)
		}
	}
	if string(before) != string(after) || !mapsEqual(state, treeState(t, n.root, "etc/kubernetes")) {
		t.Errorf("[nodeops] FAIL the second apply changed the backup record or /etc/kubernetes")
	}
	t.Logf("[nodeops] PASS a second apply on %s passes its gates and changes nothing (calls: %s)", n.name, strings.Join(again, "; "))
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

const adminToken = "snapshift-e2e-admin-token"

// binDir is where hack/build-k8s.sh put the binaries of version ver.
func binDir(t testing.TB, ver string) string {
	t.Helper()
	cache := os.Getenv("SNAPSHIFT_E2E_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "snapshift-e2e")
	}
	dir := filepath.Join(cache, "k8s-"+ver)
	for _, b := range []string{"kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("%s %s not built: run hack/build-k8s.sh %s (make e2e does): %v", b, ver, ver, err)
		}
	}
	return dir
}

// pki is a throwaway PKI: one self-signed serving cert for 127.0.0.1 (also
// the CA clients trust) and a service-account key pair.
type pki struct {
	dir               string
	certFile, keyFile string
	saKey, saPub      string
	tokens            string
	caPEM             []byte
	saPrivate         *rsa.PrivateKey
	// clientCA, when set, lets clients authenticate with certificates of
	// this CA (a kubeadm PKI's ca.crt); kubeconfigFor, when set, is the
	// kubeconfig kube-controller-manager uses instead of the admin token.
	clientCA      string
	kubeconfigFor func(url string) string
	// extraArgs are added to kube-apiserver's command line.
	extraArgs []string
}

func newPKI(t testing.TB, dir string) *pki {
	t.Helper()
	p := &pki{dir: dir}
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	p.caPEM = crt
	p.certFile, p.keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	write(t, p.certFile, crt, 0o644)
	write(t, p.keyFile, key, 0o600)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p.saPrivate = rk
	pub, err := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p.saKey, p.saPub = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	write(t, p.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}), 0o600)
	write(t, p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
	p.tokens = filepath.Join(dir, "tokens.csv")
	write(t, p.tokens, []byte(adminToken+",admin,admin,system:masters\n"), 0o600)
	return p
}

func write(t testing.TB, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}

// proc is a child process with its log in a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func start(t testing.TB, name, bin string, args []string, logDir string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *proc) stop() {
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// dumpOnFailure prints the tail of each log when the test fails.
func dumpOnFailure(t testing.TB, procs ...*proc) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, p := range procs {
			if p == nil {
				continue
			}
			text := p.logText()
			if len(text) > 8000 {
				text = "...\n" + text[len(text)-8000:]
			}
			t.Logf("---- %s log (%s) ----\n%s", p.name, p.log, text)
		}
	})
}

// apiserver starts kube-apiserver against etcd on the given service range.
type apiserver struct {
	*proc
	url    string
	config *rest.Config
	client kubernetes.Interface
	dyn    dynamic.Interface
}

func startAPIServer(ctx context.Context, t testing.TB, bin string, etcd *etcdtest.Server, p *pki, serviceCIDR, logDir string, extra ...string) *apiserver {
	t.Helper()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--etcd-servers=" + etcd.Endpoint(),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + p.certFile, "--tls-private-key-file=" + p.keyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPub, "--service-account-signing-key-file=" + p.saKey,
		"--token-auth-file=" + p.tokens, "--authorization-mode=Node,RBAC",
		"--allow-privileged=true", "--profiling=false", "--v=2",
		// The only address here is loopback, which the kubernetes Endpoints may not hold.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(p.dir, "apiserver-certs"),
	}
	if p.clientCA != "" {
		args = append(args, "--client-ca-file="+p.clientCA)
	}
	args = append(append(args, p.extraArgs...), extra...)
	a := &apiserver{proc: start(t, "kube-apiserver", filepath.Join(bin, "kube-apiserver"), args, logDir)}
	dumpOnFailure(t, a.proc)
	a.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	a.config = &rest.Config{Host: a.url, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM},
		QPS: 200, Burst: 400, Timeout: 30 * time.Second}
	a.waitReady(ctx, t)
	a.client = kubernetes.NewForConfigOrDie(a.config)
	a.dyn = dynamic.NewForConfigOrDie(a.config)
	return a
}

func (a *apiserver) waitReady(ctx context.Context, t testing.TB) {
	t.Helper()
	tr, err := rest.TransportFor(a.config)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	deadline := time.Now().Add(3 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		if done, err := a.exited(); done {
			t.Fatalf("kube-apiserver exited during start: %v", err)
		}
		resp, err := hc.Get(a.url + "/readyz")
		if err == nil {
			b := new(bytes.Buffer)
			b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(b.String()))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	t.Fatalf("kube-apiserver not ready after 3m: %s", last)
}

// kubeconfig writes a kubeconfig for the admin token.
func kubeconfig(t *testing.T, dir, url string, ca []byte) string {
	t.Helper()
	caFile := filepath.Join(dir, "ca.crt")
	write(t, caFile, ca, 0o644)
	path := filepath.Join(dir, "admin.kubeconfig")
	write(t, path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {token: %q}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, url, caFile, adminToken)), 0o600)
	return path
}

func startKCM(t *testing.T, bin string, a *apiserver, p *pki, serviceCIDR, podCIDR, logDir string) *proc {
	t.Helper()
	kc := kubeconfig(t, p.dir, a.url, p.caPEM)
	if p.kubeconfigFor != nil {
		kc = p.kubeconfigFor(a.url)
	}
	args := []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		"--allocate-node-cidrs=true", "--cluster-cidr=" + podCIDR, "--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-private-key-file=" + p.saKey, "--root-ca-file=" + p.certFile,
		"--use-service-account-credentials=false", "--controllers=*", "--v=2",
	}
	k := start(t, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"), args, logDir)
	dumpOnFailure(t, k)
	return k
}

// repoPath is a path of the repository, found from this file's directory:
// make e2e runs the compiled test binary from the repository's root, `go
// test ./e2e` from e2e/, and a path relative to either fails in the other.
func repoPath(rel string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", rel)
}

// repoFile reads a file of the repository by its path from the root: the
// test binary runs from the root (make e2e) or from e2e/ (go test).
func repoFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(filepath.Join(parts...)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fusedRestore migrates a snapshot while restoring it, with `snapshift
// restore SNAPSHOT [rule flags]`, into dir/etcd-restored as the single member
// e2e, checks the member's database with `snapshift verify` and verifyArgs,
// and serves it with a real etcd. It returns restore's output.
func fusedRestore(t *testing.T, snap, dir string, verifyArgs []string, ruleFlags ...string) (string, *etcdtest.Server) {
	t.Helper()
	peer, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	dataDir := filepath.Join(dir, "etcd-restored")
	out := run(t, append([]string{"restore", snap, "--name", "e2e", "--data-dir", dataDir, "--initial-cluster", "e2e=" + peerURL,
		"--initial-advertise-peer-urls", peerURL}, ruleFlags...)...)
	db := filepath.Join(dataDir, "member", "snap", "db")
	run(t, append([]string{"verify", db, "--skip-hash-check", "--quiet"}, verifyArgs...)...)
	return out, etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "e2e", PeerURL: peerURL})
}

// restoreMember restores a migrated snapshot with `snapshift restore` into
// dir/etcd-restored as the single member e2e and serves it with a real etcd.
func restoreMember(t *testing.T, migrated, dir string) *etcdtest.Server {
	t.Helper()
	peer, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	dataDir := filepath.Join(dir, "etcd-restored")
	run(t, "restore", migrated, "--name", "e2e", "--data-dir", dataDir, "--initial-cluster", "e2e="+peerURL, "--initial-advertise-peer-urls", peerURL)
	return etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "e2e", PeerURL: peerURL})
}

// testEnv is what most e2e tests start from: the newest Kubernetes
// version and its binaries, a context with the test's deadline, a
// temporary directory and a log directory in it.
type testEnv struct {
	ctx                   context.Context
	ver, bin, dir, logDir string
}

func newTestEnv(t *testing.T, timeout time.Duration) *testEnv {
	t.Helper()
	ver := versions()[0]
	e := &testEnv{ver: ver, bin: binDir(t, ver), dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	e.ctx, e.logDir = ctx, filepath.Join(e.dir, "logs")
	if err := os.MkdirAll(e.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

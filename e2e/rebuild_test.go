//go:build e2e

package e2e

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestRebuildDisasterRecovery goes through `snapshift rebuild` with no PKI
// and no manifests (a disaster-recovery drill) and starts the real control
// plane on what the bundle holds: the restored member, the generated
// serving certificate, CA, service-account keys and kubeconfigs.
func TestRebuildDisasterRecovery(t *testing.T) {
	e := newTestEnv(t, 10*time.Minute)
	ver, bin, ctx, dir, logDir := e.ver, e.bin, e.ctx, e.dir, e.logDir

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, newPKI(t, dir), oldServiceCIDR, logDir)
	src := populate(ctx, t, api.client, api)
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	// Three control-plane nodes at 127.0.0.1-3 (all loopback), one etcd
	// member each, behind a control-plane endpoint name.
	var ms []member
	var yamlMembers []string
	for i := 1; i <= 3; i++ {
		peer, err1 := etcdtest.FreePort()
		client, err2 := etcdtest.FreePort()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		m := member{name: fmt.Sprintf("e2e-%d", i), node: fmt.Sprintf("cp-e2e-%d", i), addr: fmt.Sprintf("127.0.0.%d", i),
			peerURL: fmt.Sprintf("http://127.0.0.1:%d", peer), clientURL: fmt.Sprintf("http://127.0.0.1:%d", client)}
		ms = append(ms, m)
		yamlMembers = append(yamlMembers, fmt.Sprintf("  - {name: %s, nodeName: %s, advertiseAddress: %s, peerURL: %q, clientURL: %q}", m.name, m.node, m.addr, m.peerURL, m.clientURL))
	}
	bundle := filepath.Join(dir, "bundle")
	enc := filepath.Join(dir, "encryption-config.yaml")
	write(t, enc, []byte(e2eEncryptionConfig), 0o600)
	cfg := filepath.Join(dir, "rebuild.yaml")
	write(t, cfg, []byte(fmt.Sprintf(`apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: %s
output: %s
encryptionConfig: %s
networking: {serviceSubnet: %s, podSubnet: %s, controlPlaneEndpoint: %s}
etcd:
  members:
%s
manifests: {kubernetesVersion: %s}
`, snap, bundle, enc, newServiceCIDR, newPodCIDR, cpEndpoint+":6443", strings.Join(yamlMembers, "\n"), ver)), 0o600)
	run(t, "rebuild", "--config", cfg, "--quiet")

	var restored []etcdtest.RestoredConfig
	for _, m := range ms {
		restored = append(restored, etcdtest.RestoredConfig{DataDir: filepath.Join(bundle, "etcd", m.name), Name: m.node, PeerURL: m.peerURL})
	}
	members := etcdtest.StartRestoredClusterT(t, restored)
	t.Logf("[rebuild] PASS the three restored members form one cluster")
	etcd2 := members[0]
	k := filepath.Join(bundle, "kubernetes", ms[0].node)
	b := &pki{dir: filepath.Join(dir, "bundle-run"), certFile: filepath.Join(k, "pki", "apiserver.crt"), keyFile: filepath.Join(k, "pki", "apiserver.key"),
		saKey: filepath.Join(k, "pki", "sa.key"), saPub: filepath.Join(k, "pki", "sa.pub"), clientCA: filepath.Join(k, "pki", "ca.crt")}
	os.MkdirAll(b.dir, 0o700)
	// The bundle's new Secrets (the bootstrap token) are encrypted with the
	// first provider of the encryption config: this apiserver reads them
	// with the copy the bundle holds for node 1.
	b.extraArgs = []string{"--encryption-provider-config=" + filepath.Join(k, "enc", "encryption-config.yaml")}
	b.tokens = filepath.Join(b.dir, "tokens.csv")
	write(t, b.tokens, []byte(adminToken+",admin,admin,system:masters\n"), 0o600)
	caPEM, err := os.ReadFile(b.clientCA)
	if err != nil {
		t.Fatal(err)
	}
	b.caPEM = caPEM
	saKey, err := keyutil.PrivateKeyFromFile(b.saKey)
	if err != nil {
		t.Fatal(err)
	}
	b.saPrivate = saKey.(*rsa.PrivateKey)
	// The bundle's kubeconfigs name the API server at 127.0.0.1:6443; here
	// it listens on a free port: point a copy at it, nothing else changed.
	b.kubeconfigFor = func(url string) string { return retarget(t, filepath.Join(k, "controller-manager.conf"), url, b.dir) }

	// Serving certificate: startAPIServer's readiness check trusts only the
	// bundle's CA, so a ready apiserver proves the chain and the 127.0.0.1 SAN.
	since := time.Now()
	api2 := startAPIServer(ctx, t, bin, etcd2, b, newServiceCIDR, logDir)
	t.Logf("[rebuild] PASS kube-apiserver serves with the bundle's certificate, chained to the bundle's CA")
	// super-admin.conf authenticates with its client certificate.
	superCfg, err := clientcmd.BuildConfigFromFlags(api2.url, retarget(t, filepath.Join(k, "super-admin.conf"), api2.url, b.dir))
	if err != nil {
		t.Fatal(err)
	}
	super := kubernetes.NewForConfigOrDie(superCfg)
	nodes, err := super.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != len(src.nodes) {
		t.Fatalf("[rebuild] FAIL super-admin.conf's client certificate: %v (%d nodes)", err, len(nodes.Items))
	}
	t.Logf("[rebuild] PASS super-admin.conf authenticates with its client certificate")
	kcm := startKCM(t, bin, api2, b, newServiceCIDR, newPodCIDR, logDir)
	judge(ctx, t, "rebuild "+ver, api2, kcm, etcd2, src, b, since)

	cm, err := super.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err == nil {
		kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
		ok := err == nil
		for _, c := range kc.Clusters {
			ok = ok && string(c.CertificateAuthorityData) == string(caPEM)
		}
		if !ok {
			t.Errorf("[rebuild] FAIL cluster-info does not carry the bundle's CA")
		} else {
			t.Logf("[rebuild] PASS cluster-info carries the bundle's CA")
		}
	}
	secs, err := super.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(corev1.SecretTypeBootstrapToken)})
	if err != nil || len(secs.Items) != 1 || !strings.HasPrefix(secs.Items[0].Name, "bootstrap-token-") {
		t.Errorf("[rebuild] FAIL bootstrap token Secret: %v %d", err, len(secs.Items))
	} else {
		t.Logf("[rebuild] PASS a bootstrap token Secret for the join command exists")
	}
	checkOtherNodes(ctx, t, bin, bundle, ms, members, caPEM, logDir, dir)
}

// member is one control-plane node of the e2e rebuild.
type member struct{ name, node, addr, peerURL, clientURL string }

// cpEndpoint is the e2e cluster's control-plane endpoint name.
const cpEndpoint = "cp.e2e.internal"

// e2eEncryptionConfig encrypts new Secrets with aescbc and still reads the
// restored ones, stored in clear.
const e2eEncryptionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - {name: key1, secret: c25hcHNoaWZ0LWUyZS1hZXNjYmMta2V5LTMyLWJ5dGU=}
  - identity: {}
`

// checkOtherNodes starts, for every node but the first, a kube-apiserver
// with that node's generated manifest (its flags read back from the Pod,
// its paths pointed into the bundle, its own etcd member) and checks that
// it serves the node's own certificate, valid for the node's address and
// the control-plane endpoint name and for no other node's address, and
// that the next node's kubelet.conf authenticates through it as
// system:node:<that node>. The second node's apiserver also proves the
// encryption config.
func checkOtherNodes(ctx context.Context, t *testing.T, bin, bundle string, ms []member, etcds []*etcdtest.Server, caPEM []byte, logDir, dir string) {
	for i := 1; i < len(ms); i++ {
		api := checkNodeAPIServer(ctx, t, bin, bundle, ms, i, etcds[i], caPEM, logDir, dir)
		if i == 1 {
			checkEncryption(ctx, t, api, filepath.Join(bundle, "kubernetes", ms[0].node, "super-admin.conf"), etcds[i], dir) // super-admin.conf is only on the first node
		}
		api.stop()
	}
}

// checkNodeAPIServer starts node i's kube-apiserver and checks its
// certificate, and node i+1's kubelet.conf through it.
func checkNodeAPIServer(ctx context.Context, t *testing.T, bin, bundle string, ms []member, i int, etcd *etcdtest.Server, caPEM []byte, logDir, dir string) *apiserver {
	node, next := ms[i], ms[(i+1)%len(ms)]
	nd := filepath.Join(bundle, "kubernetes", node.node)
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := manifestArgs(t, filepath.Join(nd, "manifests", "kube-apiserver.yaml"), nd, map[string]string{
		// The test environment, not the node: a free port, the etcd member
		// over plain HTTP, and no kubernetes Endpoints (loopback addresses
		// may not be Endpoints).
		"secure-port": strconv.Itoa(port), "etcd-servers": etcd.Endpoint(), "endpoint-reconciler-type": "none",
		"etcd-cafile": "", "etcd-certfile": "", "etcd-keyfile": "",
	})
	if !slices.Contains(args, "--advertise-address="+node.addr) {
		t.Fatalf("[rebuild] FAIL %s's manifest does not advertise %s: %v", node.node, node.addr, args)
	}
	url := fmt.Sprintf("https://%s:%d", node.addr, port)
	kubelet, err := clientcmd.BuildConfigFromFlags(url, retarget(t, filepath.Join(bundle, "kubernetes", next.node, "kubelet.conf"), url, dir))
	if err != nil {
		t.Fatal(err)
	}
	api := &apiserver{proc: start(t, "kube-apiserver-"+node.node, filepath.Join(bin, "kube-apiserver"), args, logDir), url: url, config: kubelet}
	dumpOnFailure(t, api.proc)
	api.waitReady(ctx, t) // trusts only the bundle's CA
	t.Logf("[rebuild] PASS kube-apiserver started from %s's manifest serves at %s", node.node, url)

	want, err := os.ReadFile(filepath.Join(nd, "pki", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, name := range []string{node.addr, cpEndpoint} {
		conn, err := tls.Dial("tcp", fmt.Sprintf("%s:%d", node.addr, port), &tls.Config{RootCAs: roots, ServerName: name})
		if err != nil {
			t.Fatalf("[rebuild] FAIL %s's apiserver is not valid for %s with only the new CA: %v", node.node, name, err)
		}
		leaf := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})) != string(want) {
			t.Fatalf("[rebuild] FAIL %s's apiserver does not serve its own apiserver.crt", node.node)
		}
		for _, other := range ms {
			if name == node.addr && other.addr != node.addr && leaf.VerifyHostname(other.addr) == nil {
				t.Errorf("[rebuild] FAIL %s's certificate is valid for %s's address %s", node.node, other.node, other.addr)
			}
		}
	}
	t.Logf("[rebuild] PASS %s serves its own certificate, valid for %s and %s and no other node's address", node.node, node.addr, cpEndpoint)

	review, err := kubernetes.NewForConfigOrDie(kubelet).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("[rebuild] FAIL %s's kubelet.conf: %v", next.node, err)
	}
	u := review.Status.UserInfo
	if u.Username != "system:node:"+next.node || !slices.Contains(u.Groups, "system:nodes") {
		t.Fatalf("[rebuild] FAIL %s's kubelet.conf authenticates as %s %v", next.node, u.Username, u.Groups)
	}
	t.Logf("[rebuild] PASS %s's kubelet.conf authenticates through %s as %s %v", next.node, node.node, u.Username, u.Groups)
	return api
}

// checkEncryption: the apiserver started from the generated manifest uses
// the bundle's encryption config (--encryption-provider-config, mounted
// from the bundle): it reads the restored Secrets and stores a new one
// encrypted with its aescbc key.
func checkEncryption(ctx context.Context, t *testing.T, api *apiserver, superAdmin string, etcd *etcdtest.Server, dir string) {
	cfg, err := clientcmd.BuildConfigFromFlags(api.url, retarget(t, superAdmin, api.url, dir))
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	if secs, err := c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err != nil || len(secs.Items) == 0 {
		t.Fatalf("[rebuild] FAIL the restored Secrets through the node's apiserver: %v", err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-encrypted", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v")}}
	if _, err := c.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Client().Get(ctx, "/registry/secrets/default/e2e-encrypted")
	if err != nil || len(resp.Kvs) != 1 || !strings.HasPrefix(string(resp.Kvs[0].Value), "k8s:enc:aescbc:v1:key1:") {
		t.Fatalf("[rebuild] FAIL a new Secret is not stored with the bundle's aescbc key: %v", err)
	}
	got, err := c.CoreV1().Secrets("default").Get(ctx, "e2e-encrypted", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != "v" {
		t.Fatalf("[rebuild] FAIL the encrypted Secret does not read back: %v", err)
	}
	t.Logf("[rebuild] PASS the node's apiserver runs with the bundle's encryption config: restored Secrets readable, new ones stored as k8s:enc:aescbc:v1:key1")

	// The new control-plane endpoint is what kubeadm-config and kube-proxy say.
	kc, err1 := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	kp, err2 := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err1 != nil || err2 != nil || !strings.Contains(kc.Data["ClusterConfiguration"], "controlPlaneEndpoint: "+cpEndpoint+":6443") ||
		!strings.Contains(kp.Data["kubeconfig.conf"], "server: https://"+cpEndpoint+":6443") {
		t.Fatalf("[rebuild] FAIL the control-plane endpoint did not move: %v %v", err1, err2)
	}
	t.Logf("[rebuild] PASS kubeadm-config's controlPlaneEndpoint and kube-proxy's server are %s:6443", cpEndpoint)
}

// manifestArgs reads a generated static Pod back and returns its command's
// arguments with /etc/kubernetes/ paths pointing into the node's bundle
// directory; override replaces a flag's value ("" drops the flag).
func manifestArgs(t *testing.T, path, nodeDir string, override map[string]string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatal(err)
	}
	var args []string
	seen := map[string]bool{}
	for _, a := range pod.Spec.Containers[0].Command[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if v, ok := override[name]; ok {
			seen[name] = true
			if v == "" {
				continue
			}
			value = v
		}
		args = append(args, "--"+name+"="+strings.ReplaceAll(value, "/etc/kubernetes/", nodeDir+"/"))
	}
	for name, v := range override {
		if !seen[name] && v != "" {
			args = append(args, "--"+name+"="+v)
		}
	}
	return args
}

// retarget writes a copy of a kubeconfig whose server is url.
func retarget(t *testing.T, path, url, dir string) string {
	t.Helper()
	c, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.Clusters {
		cl.Server = url
	}
	out := filepath.Join(dir, "retargeted-"+filepath.Base(path))
	if err := clientcmd.WriteToFile(*c, out); err != nil {
		t.Fatal(err)
	}
	return out
}

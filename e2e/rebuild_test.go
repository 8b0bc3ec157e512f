//go:build e2e

package e2e

import (
	"context"
	"crypto/rsa"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestRebuildDisasterRecovery goes through `snapshift rebuild` with no PKI
// and no manifests (a disaster-recovery drill) and starts the real control
// plane on what the bundle holds: the restored member, the generated
// serving certificate, CA, service-account keys and kubeconfigs.
func TestRebuildDisasterRecovery(t *testing.T) {
	ver := versions()[0]
	bin := binDir(t, ver)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, newPKI(t, dir), oldServiceCIDR, logDir)
	src := populate(ctx, t, api.client, api)
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	peer, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	client, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	bundle := filepath.Join(dir, "bundle")
	cfg := filepath.Join(dir, "rebuild.yaml")
	write(t, cfg, []byte(fmt.Sprintf(`apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: %s
output: %s
networking: {serviceSubnet: %s, podSubnet: %s}
etcd:
  members:
  - {name: e2e, peerURL: %q, clientURL: "http://127.0.0.1:%d"}
pki: {nodeName: cp-e2e, advertiseAddress: 127.0.0.1}
manifests: {kubernetesVersion: %s}
`, snap, bundle, newServiceCIDR, newPodCIDR, peerURL, client, ver)), 0o600)
	run(t, "rebuild", "--config", cfg, "--quiet")

	etcd2 := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: filepath.Join(bundle, "etcd", "e2e"), Name: "e2e", PeerURL: peerURL})
	k := filepath.Join(bundle, "kubernetes")
	b := &pki{dir: filepath.Join(dir, "bundle-run"), certFile: filepath.Join(k, "pki", "apiserver.crt"), keyFile: filepath.Join(k, "pki", "apiserver.key"),
		saKey: filepath.Join(k, "pki", "sa.key"), saPub: filepath.Join(k, "pki", "sa.pub"), clientCA: filepath.Join(k, "pki", "ca.crt")}
	os.MkdirAll(b.dir, 0o700)
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

//go:build e2e

package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/testfile"
	sspki "github.com/snapshift/snapshift/pki"
	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/rules"
)

// kubeadm is the oracle: for a table of configurations, snapshift rebuild
// makes a bundle, and kubeadm itself (built at the cluster's version by
// hack/build-k8s.sh) runs `init phase certs all`, `kubeconfig all`,
// `control-plane all` and `etcd local` on the same configuration for every
// node. Every certificate (subject, SANs in order, usages, key type,
// validity, issuer), kubeconfig (cluster and context names, server, user,
// client certificate) and manifest (every flag in order, env, volume,
// mount, probe, resource, annotation) is compared field by field, and
// kubeadm's own check of existing files (the one `kubeadm join` runs: a
// certificate on disk must be signed by the CA and hold every SAN the
// configuration asks for, a kubeconfig must hold the CA and the server)
// is run on every node's part of the bundle. The differences that are on
// purpose are listed in oracleOnPurpose; any other fails the test.

// oracleNode is one control-plane node of a configuration.
type oracleNode struct{ name, addr string }

// oracleCase is one configuration of the table.
type oracleCase struct {
	name string
	// cc is the snapshot's kubeadm-config ClusterConfiguration (the
	// migration's ranges and endpoint are what kubeadm is given).
	cc    string
	nodes []oracleNode
	// existingCA: the bundle reuses a PKI made for cp1 at its recorded
	// address 10.0.0.10 (cp1 moves to its new address).
	existingCA bool
	keyAlg     sspki.KeyAlgorithm
	// memberPrefix names each etcd member <prefix><node> in the rebuild
	// file (kubeadm names members after their nodes).
	memberPrefix string
}

const oracleDefaultCC = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: VERSION
controlPlaneEndpoint: 10.0.0.10:6443
networking: {serviceSubnet: 192.168.0.0/16, podSubnet: 10.244.0.0/16, dnsDomain: cluster.local}
etcd: {local: {dataDir: /var/lib/etcd}}
`

const oracleCustomCC = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: VERSION
clusterName: prod-eu
controlPlaneEndpoint: 10.0.0.10:6443
encryptionAlgorithm: ECDSA-P256
certificateValidityPeriod: 2160h0m0s
caCertificateValidityPeriod: 43800h0m0s
networking: {serviceSubnet: 192.168.0.0/16, podSubnet: 10.244.0.0/16, dnsDomain: corp.example}
apiServer:
  certSANs: [api.corp.example]
  extraEnvs: [{name: API_ONLY, value: a}, {name: SHARED, value: api}]
controllerManager:
  extraEnvs: [{name: KCM_ONLY, value: k}, {name: SHARED, value: kcm}]
scheduler:
  extraEnvs: [{name: SCHED_ONLY, value: s}]
etcd:
  local:
    dataDir: /data/etcd
    extraEnvs: [{name: ETCD_ONLY, value: e}]
    serverCertSANs: [etcd.corp.example]
`

// oracleVersion is the Kubernetes version of kubeadm and of the cluster:
// the newest under test.
func oracleVersion() string { return versions()[0] }

func oracleCases() []oracleCase {
	one := []oracleNode{{"cp1", "10.0.0.11"}}
	three := []oracleNode{{"cp1", "10.0.0.11"}, {"cp2", "10.0.0.12"}, {"cp3", "10.0.0.13"}}
	return []oracleCase{
		{name: "defaults-new-ca", cc: oracleDefaultCC, nodes: one},
		{name: "custom-new-ca", cc: oracleCustomCC, nodes: three, memberPrefix: "etcd-"},
		{name: "defaults-existing-ca-moved", cc: oracleDefaultCC, nodes: three, existingCA: true},
		{name: "custom-existing-ca-moved", cc: oracleCustomCC, nodes: one, existingCA: true, keyAlg: sspki.ECDSAP256},
		{name: "defaults-existing-ca-in-place", cc: oracleDefaultCC, nodes: []oracleNode{{"cp1", "10.0.0.10"}}, existingCA: true},
	}
}

// oracleOnPurpose are the differences from kubeadm that are meant: the
// check's key (a regexp) and why.
func oracleOnPurpose() []struct{ row, key, reason string } {
	return []struct{ row, key, reason string }{
		{``, `^manifest (kube-apiserver|kube-controller-manager) volume(Mount)?\[(etc-ca-certificates|usr-share-ca-certificates|usr-local-share-ca-certificates|etc-pki|etc-pki-ca-trust|etc-pki-tls-certs)\]`,
			"kubeadm mounts the CA directories that exist on the machine it runs on; the bundle is built elsewhere and mounts /etc/ssl/certs only (manifests.CACertPaths adds more)"},
		{``, `^manifest etcd command --initial-cluster$`,
			"a restored member starts with every member of the restored cluster; kubeadm init's first member lists itself, a joining one the running members"},
		{`× cp[23]$`, `^file super-admin\.conf$`,
			"kubeadm join --control-plane writes no super-admin.conf: only the first node has it (kubeadm init is the oracle for every node here)"},
		{`existing-ca-in-place`, `^file (admin|super-admin|kubelet|controller-manager|scheduler)\.conf$`,
			"existing CA, nothing moved: the nodes keep their kubeconfigs (the bundle has none)"},
		{`existing-ca.* × cp1$`, `^cert (apiserver-kubelet-client|front-proxy-client|etcd/healthcheck-client|apiserver-etcd-client) validity$`,
			"existing CA: the first node's certificates that name no node address are kept as they are (kubeadm certs renew renews them with the configured period)"},
	}
}

func TestKubeadmOracle(t *testing.T) {
	cache := os.Getenv("SNAPSHIFT_E2E_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "snapshift-e2e")
	}
	kubeadm := filepath.Join(cache, "k8s-"+oracleVersion(), "kubeadm")
	for _, b := range []string{kubeadm, filepath.Join(filepath.Dir(kubeadm), "kubeadm-check")} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%s not built: run hack/build-k8s.sh %s kube-apiserver kube-controller-manager kubeadm and hack/build-kubeadm-check.sh %s (make e2e does): %v",
				filepath.Base(b), oracleVersion(), oracleVersion(), err)
		}
	}
	var table []string
	for _, tc := range oracleCases() {
		tc.cc = strings.ReplaceAll(tc.cc, "VERSION", oracleVersion())
		t.Run(tc.name, func(t *testing.T) {
			table = append(table, runOracleCase(t, kubeadm, tc)...)
		})
	}
	t.Logf("kubeadm oracle (configuration × node: checks):\n%s", strings.Join(table, "\n"))
}

func runOracleCase(t *testing.T, kubeadm string, tc oracleCase) []string {
	dir := t.TempDir()
	snap := testfile.RewriteLive(t, membersSample, filepath.Join(dir, "in.db"), setKubeadmConfig(tc.cc))
	var ms []rebuild.Member
	for _, n := range tc.nodes {
		ms = append(ms, rebuild.Member{Name: tc.memberPrefix + n.name, NodeName: n.name, AdvertiseAddress: n.addr,
			PeerURL: "https://" + n.addr + ":2380", ClientURL: "https://" + n.addr + ":2379"})
	}
	out := filepath.Join(dir, "bundle")
	cfg := &rebuild.Config{
		APIVersion: rebuild.APIVersion, Kind: rebuild.Kind, Snapshot: snap, Output: out,
		Networking: rebuild.Networking{Options: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR},
			PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR}}},
		Etcd:      rebuild.Etcd{Members: ms},
		Manifests: rebuild.Manifests{KubernetesVersion: oracleVersion()},
	}
	if tc.existingCA {
		src := filepath.Join(dir, "source-pki")
		if _, err := sspki.GenerateAll(sspki.Config{CertDir: src, ServiceCIDR: oldServiceCIDR, NodeName: "cp1", AdvertiseAddress: "10.0.0.10",
			ControlPlaneEndpoint: "10.0.0.10:6443", KeyAlgorithm: tc.keyAlg}); err != nil {
			t.Fatal(err)
		}
		cfg.PKI.Source = src
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{}); err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, n := range tc.nodes {
		nodeDir := filepath.Join(out, bundle.KubeDir, n.name)
		o := &oracleRun{t: t, kubeadm: kubeadm, cc: tc.cc, node: n, first: tc.nodes[0], dir: dir, row: tc.name + " × " + n.name}
		o.certsAndKubeconfigs(nodeDir, filepath.Join(dir, n.name+"-kubeadm"))
		o.validate(nodeDir, filepath.Join(dir, n.name+"-validate"))
		o.manifests(nodeDir, filepath.Join(dir, n.name+"-manifests"))
		table = append(table, o.summary()...)
	}
	return table
}

// setKubeadmConfig puts doc in the snapshot's kubeadm-config.
func setKubeadmConfig(doc string) func(string, []byte) ([]byte, error) {
	c := codec.New()
	return func(key string, value []byte) ([]byte, error) {
		if key != "/registry/configmaps/kube-system/kubeadm-config" {
			return value, nil
		}
		o, err := c.Decode(value)
		if err != nil {
			return nil, err
		}
		cm := o.Obj.(*corev1.ConfigMap).DeepCopy()
		cm.Data["ClusterConfiguration"] = doc
		o.Obj = cm
		return c.Encode(o)
	}
}

// kubeadmConfigFor is what kubeadm is given for node n: the cluster's
// ClusterConfiguration as the migration leaves it (the new ranges, the
// endpoint moved with cp1) and the node's InitConfiguration.
// A certDir other than "" is the ClusterConfiguration's certificatesDir
// (kubeadm takes no --cert-dir beside --config).
func kubeadmConfigFor(t *testing.T, cc string, first, n oracleNode, certDir string) string {
	t.Helper()
	if certDir != "" {
		cc += "certificatesDir: " + certDir + "\n"
	}
	cc = strings.Replace(cc, "serviceSubnet: "+oldServiceCIDR, "serviceSubnet: "+newServiceCIDR, 1)
	cc = strings.Replace(cc, "podSubnet: "+oldPodCIDR, "podSubnet: "+newPodCIDR, 1)
	cc = strings.Replace(cc, "controlPlaneEndpoint: 10.0.0.10:6443", "controlPlaneEndpoint: "+first.addr+":6443", 1) // it follows cp1
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: %s, bindPort: 6443}
nodeRegistration: {name: %s, criSocket: unix:///var/run/containerd/containerd.sock}
---
%s`, n.addr, n.name, cc)
}

type oracleRun struct {
	t            *testing.T
	kubeadm      string
	cc, dir, row string
	node, first  oracleNode
	// ok, onPurpose (key by reason) and differs are the checks' results.
	ok        []string
	onPurpose map[string][]string
	differs   []string
}

// summary is the row's line of the oracle table.
func (o *oracleRun) summary() []string {
	out := []string{fmt.Sprintf("%s: %d checks as kubeadm (%s)", o.row, len(o.ok), strings.Join(o.ok, ", "))}
	for _, reason := range sortedKeysOf(o.onPurpose) {
		out = append(out, fmt.Sprintf("    on purpose: %s: %s", strings.Join(o.onPurpose[reason], ", "), reason))
	}
	for _, d := range o.differs {
		out = append(out, "    DIFFERS: "+d)
	}
	return out
}

// config writes kubeadm's configuration for the node, its certificatesDir
// certDir ("" for kubeadm's default), and returns its path.
func (o *oracleRun) config(certDir string) string {
	o.t.Helper()
	f, err := os.CreateTemp(o.dir, o.node.name+"-kubeadm-*.yaml")
	if err != nil {
		o.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(kubeadmConfigFor(o.t, o.cc, o.first, o.node, certDir)); err != nil {
		o.t.Fatal(err)
	}
	return f.Name()
}

// kubeadmRun runs kubeadm with a clean environment (no proxy variables:
// kubeadm copies its own into the manifests).
func (o *oracleRun) kubeadmRun(env []string, args ...string) string {
	o.t.Helper()
	cmd := exec.Command(o.kubeadm, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + o.t.TempDir()}, env...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		o.t.Fatalf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

// result records one check: ok, on purpose (with the reason) or a
// difference (the test fails).
func (o *oracleRun) result(key, diff string) {
	o.t.Helper()
	if diff == "" {
		o.ok = append(o.ok, key)
		return
	}
	for _, p := range oracleOnPurpose() {
		if regexp.MustCompile(p.key).MatchString(key) && regexp.MustCompile(p.row).MatchString(o.row) {
			if o.onPurpose == nil {
				o.onPurpose = map[string][]string{}
			}
			o.onPurpose[p.reason] = append(o.onPurpose[p.reason], key)
			return
		}
	}
	o.differs = append(o.differs, key+": "+diff)
	o.t.Errorf("%s: %s: %s", o.row, key, diff)
}

func sharedFiles() []string {
	return []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key", "sa.key", "sa.pub"}
}

// certsAndKubeconfigs: kubeadm makes the node's leaves and kubeconfigs
// from the bundle's CAs; each is compared with the bundle's.
func (o *oracleRun) certsAndKubeconfigs(nodeDir, kdir string) {
	t := o.t
	copyFilesT(t, filepath.Join(nodeDir, "pki"), filepath.Join(kdir, "pki"), sharedFiles())
	cfg := o.config(filepath.Join(kdir, "pki"))
	o.kubeadmRun(nil, "init", "phase", "certs", "all", "--config", cfg)
	o.kubeadmRun(nil, "init", "phase", "kubeconfig", "all", "--config", cfg, "--kubeconfig-dir", kdir)
	for _, spec := range sspki.Certs() {
		if spec.IsCA() {
			continue
		}
		want := describeCert(t, filepath.Join(kdir, "pki", spec.BaseName+".crt"), filepath.Join(kdir, "pki", spec.BaseName+".key"))
		got := describeCert(t, filepath.Join(nodeDir, "pki", spec.BaseName+".crt"), filepath.Join(nodeDir, "pki", spec.BaseName+".key"))
		compareMaps(o, "cert "+spec.BaseName, want, got)
	}
	for _, f := range []string{"admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
		if _, err := os.Stat(filepath.Join(nodeDir, f)); err != nil {
			o.result("file "+f, "not in the bundle")
			continue
		}
		compareMaps(o, "kubeconfig "+f, describeKubeconfig(t, filepath.Join(kdir, f)), describeKubeconfig(t, filepath.Join(nodeDir, f)))
	}
}

// validate runs kubeadm's join-time check (hack/kubeadmcheck: kubeadm's
// certsphase.CreatePKIAssets and CreateJoinControlPlaneKubeConfigFiles) on
// the node's part of the bundle: a certificate on disk must be signed by
// its CA and hold every SAN the configuration asks for, a kubeconfig must
// hold the CA and the expected server; nothing may be replaced.
func (o *oracleRun) validate(nodeDir, vdir string) {
	t := o.t
	var files []string
	filepath.WalkDir(nodeDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, "/manifests") {
			rel, _ := filepath.Rel(nodeDir, p)
			files = append(files, rel)
		}
		return nil
	})
	var backups []string
	for _, f := range files {
		if strings.Contains(filepath.Base(f), ".bak") {
			backups = append(backups, f)
		}
	}
	bak := ""
	if len(backups) > 0 {
		bak = "backups of old files in the bundle: " + strings.Join(backups, ", ")
	}
	o.result("no .bak in the node's part of the bundle", bak)
	copyFilesT(t, nodeDir, vdir, files)
	before := treeSums(t, vdir)
	cfg := o.config(filepath.Join(vdir, "pki"))
	cmd := exec.Command(filepath.Join(filepath.Dir(o.kubeadm), "kubeadm-check"), cfg, vdir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	b, err := cmd.CombinedOutput()
	out := string(b)
	diff := ""
	if err != nil {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		diff = fmt.Sprintf("kubeadm refuses the node's files (%v): %s", err, lines[len(lines)-1])
	}
	if w := regexp.MustCompile(`(?m)^(W\d{4} .*|.*\[WARNING.*)$`).FindAllString(out, -1); len(w) > 0 {
		diff += "kubeadm warns: " + strings.Join(w, "; ")
	}
	after := treeSums(t, vdir)
	for f, s := range before {
		if after[f] != s {
			diff += fmt.Sprintf(" kubeadm replaced %s;", f)
		}
	}
	o.result("kubeadm's join-time check of the node's certificates and kubeconfigs", diff)
}

// manifests: kubeadm's control-plane and etcd manifests for the node
// (dry run, into a directory of the test), compared with the bundle's.
func (o *oracleRun) manifests(nodeDir, mdir string) {
	t := o.t
	if err := os.MkdirAll(mdir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBEADM_INIT_DRYRUN_DIR=" + mdir}
	cfg := o.config("")
	o.kubeadmRun(env, "init", "phase", "control-plane", "all", "--config", cfg, "--dry-run")
	o.kubeadmRun(env, "init", "phase", "etcd", "local", "--config", cfg, "--dry-run")
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		compareMaps(o, "manifest "+c, flattenPod(t, filepath.Join(mdir, c+".yaml")), flattenPod(t, filepath.Join(nodeDir, "manifests", c+".yaml")))
	}
}

// compareMaps records one result per key of either map.
func compareMaps(o *oracleRun, prefix string, want, got map[string]string) {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var diffs []string
	for _, k := range sorted {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case w == g && wok == gok:
		case !gok:
			o.result(prefix+" "+k, fmt.Sprintf("kubeadm %q, snapshift none", w))
		case !wok:
			o.result(prefix+" "+k, fmt.Sprintf("kubeadm none, snapshift %q", g))
		default:
			o.result(prefix+" "+k, fmt.Sprintf("kubeadm %q, snapshift %q", w, g))
		}
		if w != g || wok != gok {
			diffs = append(diffs, k)
		}
	}
	if len(diffs) == 0 {
		o.result(prefix, "")
	}
}

// describeCert is what the oracle compares of a certificate and its key.
func describeCert(t *testing.T, crtPath, keyPath string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(crtPath)
	if err != nil {
		return map[string]string{"file": "missing"}
	}
	c := parseCertPEM(t, b)
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(kb)
	if err != nil {
		t.Fatal(err)
	}
	m := certFields(c)
	m["key"] = keyType(key)
	return m
}

func certFields(c *x509.Certificate) map[string]string {
	var ips, eku []string
	for _, ip := range c.IPAddresses {
		ips = append(ips, ip.String())
	}
	for _, u := range c.ExtKeyUsage {
		eku = append(eku, fmt.Sprint(u))
	}
	return map[string]string{
		"subject.CN": c.Subject.CommonName, "subject.O": strings.Join(c.Subject.Organization, ","),
		"issuer": c.Issuer.CommonName, "SAN DNS": strings.Join(c.DNSNames, ","), "SAN IP": strings.Join(ips, ","),
		"keyUsage": fmt.Sprint(c.KeyUsage), "extKeyUsage": strings.Join(eku, ","), "isCA": fmt.Sprint(c.IsCA),
		"publicKey": keyType(c.PublicKey),
		// Validity to the hour: the two are made minutes apart.
		"validity": c.NotAfter.Sub(time.Now()).Round(time.Hour).String(),
	}
}

func keyType(k any) string {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	case *ecdsa.PrivateKey:
		return "ECDSA-" + k.Curve.Params().Name
	case *ecdsa.PublicKey:
		return "ECDSA-" + k.Curve.Params().Name
	case crypto.PublicKey:
		return fmt.Sprintf("%T", k)
	}
	return fmt.Sprintf("%T", k)
}

func parseCertPEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	cs, err := parseCerts(b)
	if err != nil || len(cs) == 0 {
		t.Fatalf("certificate: %v", err)
	}
	return cs[0]
}

func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out, nil
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

// describeKubeconfig is what the oracle compares of a kubeconfig.
func describeKubeconfig(t *testing.T, path string) map[string]string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return map[string]string{"file": "missing"}
	}
	m := map[string]string{"current-context": kc.CurrentContext}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil {
		m["context"] = "missing"
		return m
	}
	m["context.cluster"], m["context.user"] = ctx.Cluster, ctx.AuthInfo
	m["clusters"] = strings.Join(sortedKeysOf(kc.Clusters), ",")
	m["users"] = strings.Join(sortedKeysOf(kc.AuthInfos), ",")
	if cl := kc.Clusters[ctx.Cluster]; cl != nil {
		m["server"] = cl.Server
		ca := parseCertPEM(t, cl.CertificateAuthorityData)
		m["CA"] = ca.Subject.CommonName + " " + ca.SerialNumber.String()
	}
	if u := kc.AuthInfos[ctx.AuthInfo]; u != nil {
		m["client-certificate file"], m["client-key file"] = u.ClientCertificate, u.ClientKey
		if len(u.ClientCertificateData) > 0 {
			for k, v := range certFields(parseCertPEM(t, u.ClientCertificateData)) {
				m["client "+k] = v
			}
			key, err := keyutil.ParsePrivateKeyPEM(u.ClientKeyData)
			if err != nil {
				t.Fatal(err)
			}
			m["client key"] = keyType(key)
		}
	}
	return m
}

func sortedKeysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// flattenPod is a static Pod as key/value pairs: every flag of the
// command by name (and the flags' order), each env variable, volume and
// mount by name, and every other field by its JSON path.
func flattenPod(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return map[string]string{"file": "missing"}
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]string{}
	ctr := pod.Spec.Containers[0]
	var order []string
	for i, a := range ctr.Command {
		if i == 0 {
			out["command[0]"] = a
			continue
		}
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out["command --"+name] = value
		order = append(order, name)
	}
	out["command order"] = strings.Join(order, " ")
	for _, e := range ctr.Env {
		out["env["+e.Name+"]"] = e.Value
	}
	var envOrder []string
	for _, e := range ctr.Env {
		envOrder = append(envOrder, e.Name)
	}
	out["env order"] = strings.Join(envOrder, " ")
	for _, v := range pod.Spec.Volumes {
		j, _ := json.Marshal(v.VolumeSource)
		out["volume["+v.Name+"]"] = string(j)
	}
	for _, m := range ctr.VolumeMounts {
		j, _ := json.Marshal(m)
		out["volumeMount["+m.Name+"]"] = string(j)
	}
	ctr.Command, ctr.Env, ctr.VolumeMounts = nil, nil, nil
	pod.Spec.Volumes = nil
	pod.Spec.Containers = []corev1.Container{ctr}
	var generic map[string]any
	j, _ := json.Marshal(pod)
	if err := json.Unmarshal(j, &generic); err != nil {
		t.Fatal(err)
	}
	flattenJSON("", generic, out)
	return out
}

func flattenJSON(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			flattenJSON(strings.TrimPrefix(prefix+"."+k, "."), x, out)
		}
	case []any:
		for i, x := range v {
			flattenJSON(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	default:
		out[prefix] = fmt.Sprint(v)
	}
}

func copyFilesT(t *testing.T, src, dst string, rels []string) {
	t.Helper()
	for _, r := range rels {
		b, err := os.ReadFile(filepath.Join(src, r))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(filepath.Join(src, r))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, r)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, r), b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

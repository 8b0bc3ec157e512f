package rebuild_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/pki"
	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/wellknown"
)

const samplePath = "../testdata/sample.db"

func fixedNow() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) }

// members picks free 127.0.0.1 peer ports: the restored data dirs are
// started for real.
func members(t *testing.T, n int) []rebuild.Member {
	t.Helper()
	var out []rebuild.Member
	for i := 0; i < n; i++ {
		p, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		c, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rebuild.Member{Name: fmt.Sprintf("cp%d", i+1),
			PeerURL: fmt.Sprintf("http://127.0.0.1:%d", p), ClientURL: fmt.Sprintf("http://127.0.0.1:%d", c)})
	}
	return out
}

func baseConfig(t *testing.T, out string, ms []rebuild.Member) *rebuild.Config {
	return &rebuild.Config{
		APIVersion: rebuild.APIVersion, Kind: rebuild.Kind, Snapshot: samplePath, Output: out,
		Networking: rebuild.Networking{Options: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}},
		Etcd:       rebuild.Etcd{Members: ms},
		PKI:        rebuild.PKI{NodeName: ms[0].Name, AdvertiseAddress: "127.0.0.1"},
		Manifests:  rebuild.Manifests{KubernetesVersion: "v1.36.3"},
	}
}

// startMembers starts every restored member of a bundle together and
// returns them once they form one cluster.
func startMembers(t *testing.T, out string, ms []rebuild.Member) []*etcdtest.Server {
	t.Helper()
	var cfgs []etcdtest.RestoredConfig
	var ic []string
	for _, m := range ms {
		ic = append(ic, nodeName(m)+"="+m.PeerURL)
	}
	for _, m := range ms {
		cfgs = append(cfgs, etcdtest.RestoredConfig{DataDir: filepath.Join(out, bundle.EtcdDir, m.Name), Name: nodeName(m),
			PeerURL: m.PeerURL, InitialCluster: strings.Join(ic, ",")})
	}
	return etcdtest.StartRestoredClusterT(t, cfgs)
}

func decode(t *testing.T, s *etcdtest.Server, key string) any {
	t.Helper()
	resp, err := s.Client().Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %v (%d kvs)", key, err, len(resp.Kvs))
	}
	o, err := codec.New().Decode(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return o.Obj
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDisasterRecoveryThreeMembers: no PKI and no manifests given — a new
// PKI, generated manifests, cleared SA tokens, cluster-info with the new CA,
// and three data dirs that form one cluster serving the migrated objects.
func TestDisasterRecoveryThreeMembers(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle")
	ms := members(t, 3)
	for i := range ms {
		ms[i].AdvertiseAddress = fmt.Sprintf("127.0.0.%d", i+1)
	}
	ms[1].NodeName = "node-b" // a node named otherwise than its member
	rep, err := rebuild.Run(context.Background(), baseConfig(t, out, ms), rebuild.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Members) != 3 || rep.JoinCommand == "" || !strings.HasPrefix(rep.CAHash, "sha256:") {
		t.Fatalf("report: %+v", rep)
	}
	// No temporary bundle left beside the output.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries beside the bundle, want only the bundle", len(entries))
	}
	// The PKI: the apiserver certificate chains to the new CA and carries
	// the new first service IP.
	// The sample's cp1 (10.0.0.10, also kubeadm-config's endpoint) is
	// rebuilt at 127.0.0.1: the endpoint follows it.
	checkNodes(t, out, ms, "127.0.0.1")
	var left []string
	for _, l := range rep.OldAddresses {
		left = append(left, l.Resource)
	}
	// The Node keeps its InternalIP until its kubelet runs; mirror and
	// other Pods on cp1 keep their status IPs; the rules moved the rest.
	if !slices.Contains(left, "nodes") || slices.Contains(left, "configmaps") || slices.Contains(left, "endpoints") {
		t.Errorf("old control-plane address left in %v", rep.OldAddresses)
	}
	if !slices.Contains(rep.ClusterConfiguration, "controlPlaneEndpoint 10.0.0.10:6443 -> 127.0.0.1:6443: its node moved (give networking.controlPlaneEndpoint to choose another)") {
		t.Errorf("report: %q", rep.ClusterConfiguration)
	}
	kdir := filepath.Join(out, bundle.KubeDir, "cp1")
	ca := readCert(t, filepath.Join(kdir, "pki", "ca.crt"))
	api := readCert(t, filepath.Join(kdir, "pki", "apiserver.crt"))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := api.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("apiserver.crt does not chain to the new CA: %v", err)
	}
	if !containsIP(api.IPAddresses, "172.24.0.1") || containsIP(api.IPAddresses, "192.168.0.1") {
		t.Errorf("apiserver SANs %v: want 172.24.0.1 and not 192.168.0.1", api.IPAddresses)
	}
	for _, f := range []string{"ca.key", "apiserver.key", "sa.key", "etcd/ca.key"} {
		if st, err := os.Stat(filepath.Join(kdir, "pki", f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", f, st, err)
		}
	}
	if _, err := clientcmd.LoadFromFile(filepath.Join(kdir, "admin.conf")); err != nil {
		t.Errorf("admin.conf: %v", err)
	}
	// Manifests parse as Pods with the new flags.
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		b, err := os.ReadFile(filepath.Join(kdir, "manifests", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict(b, &pod); err != nil {
			t.Fatalf("%s.yaml: %v", name, err)
		}
		cmd := strings.Join(pod.Spec.Containers[0].Command, " ")
		switch name {
		case "kube-apiserver":
			if !strings.Contains(cmd, "--service-cluster-ip-range=172.24.0.0/16") {
				t.Errorf("kube-apiserver: %s", cmd)
			}
		case "kube-controller-manager":
			if !strings.Contains(cmd, "--cluster-cidr=10.55.0.0/16") || !strings.Contains(cmd, "--service-cluster-ip-range=172.24.0.0/16") {
				t.Errorf("kube-controller-manager: %s", cmd)
			}
		case "etcd":
			if !strings.Contains(cmd, "--name=cp1") || !strings.Contains(cmd, "--initial-cluster=cp1="+ms[0].PeerURL) {
				t.Errorf("etcd: %s", cmd)
			}
		}
	}
	// The runbook names the real paths and the join command with its token.
	rb, err := os.ReadFile(filepath.Join(out, bundle.RunbookFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{filepath.Join(out, bundle.EtcdDir, "cp2"), "/var/lib/kubelet/config.yaml", "reads clusterDNS 172.24.0.10",
		"kubeadm join 127.0.0.1:6443 --token ", rep.CAHash, "# node-b (etcd member cp2)", "snapshift node apply --bundle /root/snapshift-bundle --node node-b",
		"add `--rollback-after 30m` to each command", "snapshift node confirm --bundle /root/snapshift-bundle --node node-b   # on node-b",
		"The token expires at " + fixedNow().Add(24*time.Hour).Format(time.RFC3339)} { // the token Secret's own expiration
		if !strings.Contains(string(rb), want) {
			t.Errorf("RUNBOOK.md does not say %q", want)
		}
	}
	// The sample runs flannel (its pods), kube-proxy and CoreDNS: the staged restart in that order.
	// The sample holds flannel's and kube-proxy's pods but not their
	// DaemonSets: the pods are named and deleted, in the CNI's and
	// kube-proxy's stages, before CoreDNS and NodeLocal DNS.
	// The worker step copies flannel's files into each worker's backup
	// before it removes them, and the rollback puts them back; ext-fake1
	// runs no kubelet and has no worker step. The endpoint moved to cp1's
	// own address: no DNS or load balancer step.
	ws, we, wr := strings.Index(string(rb), "Back up and stop the kubelet"), strings.Index(string(rb), "Apply the bundle"), strings.Index(string(rb), "## Rollback")
	if ws < 0 || we < ws || wr < 0 {
		t.Errorf("RUNBOOK.md has no worker step (at %d) before apply (at %d), or no rollback (at %d)", ws, we, wr)
		ws, we, wr = 0, 0, 0
	}
	wstep := string(rb)[ws:we]
	cp, rm := strings.Index(wstep, `cp -a /run/flannel/subnet.env "$B/cni/run/flannel/"`), strings.Index(wstep, "rm -rf /run/flannel/subnet.env")
	if cp < 0 || rm < cp || strings.Contains(wstep, "# on ext-fake1") {
		t.Errorf("RUNBOOK.md worker step:\n%s", wstep)
	}
	if rbk := string(rb)[wr:]; !strings.Contains(rbk, `cp -a "$B/cni/." /   # the CNI's files the worker step removed: /run/flannel/subnet.env, /var/lib/cni/networks/cbr0`) ||
		!strings.Contains(rbk, "kubectl delete pod -A --field-selector spec.nodeName=worker-hw1") || !strings.Contains(rbk, "the CNI (flannel, calico) recreates them") ||
		// the new cluster's cni0 removed before the old files come back (the lab: "cni0 already has an IP address different from ...")
		!strings.Contains(rbk, "ip link delete cni0") || strings.Index(rbk, "ip link delete cni0") > strings.Index(rbk, `cp -a "$B/cni/." /`) ||
		!strings.Contains(rbk, "kubectl delete pod -A --field-selector spec.nodeName=cp1") {
		t.Errorf("RUNBOOK.md worker rollback:\n%s", rbk)
	}
	if strings.Contains(string(rb), "Point the new control-plane endpoint") {
		t.Errorf("RUNBOOK.md: a DNS/LB step for an endpoint that is cp1's own address")
	}
	checkRunbook(t, string(rb), out, rep, true, []string{"worker-hw1", "worker-vm1"}, "snapshift cluster restart --bundle "+out, "kubectl -n kube-flannel delete pod kube-flannel-ds-q9w8e",
		"kubectl -n kube-system delete pod kube-proxy-m4r8t kube-proxy-x7k2p", "rollout restart deploy/coredns", "rollout restart ds/node-local-dns", "## Rollback")
	if c := rep.Operation.Cluster; c == nil || c.DNS == nil || c.DNS.Address != "172.24.0.10" || len(c.Pod.New) != 1 {
		t.Errorf("report.json operation.cluster: %+v", c)
	}
	if st, _ := os.Stat(filepath.Join(out, bundle.RunbookFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("RUNBOOK.md holds a join token: mode %v, want 0600", st.Mode().Perm())
	}
	// report.json holds no secret.
	rj, _ := os.ReadFile(filepath.Join(out, bundle.ReportFile))
	for _, v := range sample.SecretValues() {
		if strings.Contains(string(rj), v) {
			t.Errorf("report.json contains a Secret value")
		}
	}

	// The three data dirs form one cluster serving the migrated objects.
	srvs := startMembers(t, out, ms)
	list, err := srvs[0].Client().MemberList(context.Background())
	if err != nil || len(list.Members) != 3 {
		t.Fatalf("member list: %v %v", list, err)
	}
	checkPlaybooks(t, out)
	// The members are the cluster report.json records (issue 45): its own
	// cluster ID, every member's ID as recorded, none of the old cluster's.
	if rep.Etcd == nil || !strings.HasPrefix(rep.Etcd.New.Token, "snapshift-") {
		t.Fatalf("report.json's etcd identities: %+v", rep.Etcd)
	}
	if got := types.ID(list.Header.ClusterId).String(); got != rep.Etcd.New.ClusterID {
		t.Errorf("the restored cluster is %s, report.json records %s", got, rep.Etcd.New.ClusterID)
	}
	for _, m := range list.Members {
		if want, ok := rep.Etcd.New.Member(m.Name); !ok || want.ID != types.ID(m.ID).String() {
			t.Errorf("member %s has ID %s, report.json records %+v", m.Name, types.ID(m.ID), want)
		}
		for _, o := range rep.Etcd.Old.Members {
			if o.ID == types.ID(m.ID).String() {
				t.Errorf("restored member %s has the old member %s's ID %s", m.Name, o.Name, o.ID)
			}
		}
	}
	// Every member is restored under its node's name, the --name its
	// manifest renders (kubeadm's): node-b, not cp2.
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"cp1", "cp3", "node-b"}) {
		t.Errorf("restored members %v, want cp1 cp3 node-b", names)
	}
	if _, err := srvs[0].Put(context.Background(), "/snapshift-test", []byte("x")); err != nil {
		t.Fatal(err)
	}
	resp, err := srvs[2].Client().Get(context.Background(), "/snapshift-test")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("a write on cp1 is not read on cp3: %v", err)
	}
	// The control plane's recorded addresses moved with cp1.
	eps := decode(t, srvs[0], "/registry/services/endpoints/default/kubernetes").(*corev1.Endpoints)
	if ip := eps.Subsets[0].Addresses[0].IP; ip != "127.0.0.1" {
		t.Errorf("kubernetes Endpoints at %s, want cp1's new address", ip)
	}
	kcm := decode(t, srvs[0], "/registry/configmaps/kube-system/kubeadm-config").(*corev1.ConfigMap)
	if !strings.Contains(kcm.Data["ClusterConfiguration"], "controlPlaneEndpoint: 127.0.0.1:6443") {
		t.Errorf("kubeadm-config:\n%s", kcm.Data["ClusterConfiguration"])
	}
	mp := decode(t, srvs[0], "/registry/pods/kube-system/kube-apiserver-cp1").(*corev1.Pod)
	if a := mp.Annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"]; a != "127.0.0.1:6443" {
		t.Errorf("mirror Pod annotation %s", a)
	}
	svc := decode(t, srvs[1], "/registry/services/specs/default/kubernetes").(*corev1.Service)
	if svc.Spec.ClusterIP != "172.24.0.1" {
		t.Errorf("kubernetes Service at %s", svc.Spec.ClusterIP)
	}
	sec := decode(t, srvs[2], "/registry/secrets/kube-system/legacy-admin-token").(*corev1.Secret)
	if len(sec.Data["token"]) != 0 {
		t.Error("the legacy token was not cleared with a new sa.key")
	}
	cm := decode(t, srvs[0], "/registry/configmaps/kube-public/cluster-info").(*corev1.ConfigMap)
	kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(kdir, "pki", "ca.crt"))
	for _, c := range kc.Clusters {
		if string(c.CertificateAuthorityData) != string(caPEM) {
			t.Error("cluster-info does not carry the new CA")
		}
	}
	// The runbook's join token is a valid bootstrap token, stored as kubeadm
	// stores one.
	_, after, _ := strings.Cut(string(rb), "--token ")
	token, _, _ := strings.Cut(after, " ")
	id, secret, _ := strings.Cut(token, ".")
	if err := rules.ValidBootstrapToken(rules.BootstrapToken{ID: id, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	bt := decode(t, srvs[1], "/registry/secrets/kube-system/bootstrap-token-"+id).(*corev1.Secret)
	if bt.Type != corev1.SecretTypeBootstrapToken || string(bt.Data["token-id"]) != id || string(bt.Data["token-secret"]) != secret {
		t.Errorf("bootstrap token Secret: type %s, data %q", bt.Type, bt.Data)
	}
}

// TestPlannedMigrationReusesPKIAndManifests: an existing PKI (its CA kept,
// only the apiserver certificate reissued, in a copy) and existing
// manifests (only the changing flags rewritten); the sources untouched.
func TestPlannedMigrationReusesPKIAndManifests(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "etc-kubernetes")
	ms := members(t, 2)
	ms[1].AdvertiseAddress = "127.0.0.2"
	// The source PKI is cp1's at its recorded address, 10.0.0.10.
	old := pki.Config{CertDir: filepath.Join(src, "pki"), ServiceCIDR: "192.168.0.0/16", NodeName: "cp1", AdvertiseAddress: "10.0.0.10"}
	if _, err := pki.GenerateAll(old); err != nil {
		t.Fatal(err)
	}
	// A backup an earlier renewal left in the source: an old key that must
	// not travel into the bundle.
	if err := os.WriteFile(filepath.Join(src, "pki", "apiserver.key.bak"), []byte("old key"), 0o600); err != nil {
		t.Fatal(err)
	}
	mdir := filepath.Join(src, "manifests")
	copyDir(t, "../manifests/testdata/kubeadm-v1.36.3/ipv4", mdir)
	before := snapshotTree(t, src)

	out := filepath.Join(dir, "bundle")
	cfg := baseConfig(t, out, ms)
	cfg.PKI.Source = filepath.Join(src, "pki")
	cfg.Manifests = rebuild.Manifests{Source: mdir}
	rep, err := rebuild.Run(context.Background(), cfg, rebuild.Options{}) // the real clock: the CA was made just now
	if err != nil {
		t.Fatal(err)
	}
	if rep.JoinCommand != "" {
		t.Error("a join command with the CA unchanged")
	}
	if after := snapshotTree(t, src); after != before {
		t.Error("the source PKI or manifests changed")
	}
	kdir := filepath.Join(out, bundle.KubeDir, "cp1")
	oldCA, _ := os.ReadFile(filepath.Join(src, "pki", "ca.crt"))
	newCA, _ := os.ReadFile(filepath.Join(kdir, "pki", "ca.crt"))
	if string(oldCA) != string(newCA) {
		t.Error("the CA was replaced in a planned migration")
	}
	api := readCert(t, filepath.Join(kdir, "pki", "apiserver.crt"))
	if !containsIP(api.IPAddresses, "172.24.0.1") || containsIP(api.IPAddresses, "192.168.0.1") {
		t.Errorf("apiserver SANs %v", api.IPAddresses)
	}
	// cp1 moved: its apiserver certificate is rebuilt from its new
	// identity, as kubeadm's join-time check wants it (valid for the new
	// address, the old one gone), not from the old certificate's SANs.
	if err := api.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("cp1 apiserver certificate: %v", err)
	}
	if api.VerifyHostname("10.0.0.10") == nil {
		t.Errorf("cp1 apiserver certificate still valid for its old address: %v", api.IPAddresses)
	}
	b, err := os.ReadFile(filepath.Join(kdir, "manifests", "kube-apiserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "172.24.0.0/16") || strings.Contains(string(b), "192.168.0.0/16") {
		t.Errorf("kube-apiserver.yaml not rewritten:\n%s", b)
	}
	// The second node: the same CA, its own apiserver certificate and
	// etcd certificates, its own flags; no kubeconfigs (the nodes keep theirs).
	k2 := filepath.Join(out, bundle.KubeDir, "cp2")
	if ca2, _ := os.ReadFile(filepath.Join(k2, "pki", "ca.crt")); string(ca2) != string(oldCA) {
		t.Error("cp2 does not hold the reused CA")
	}
	api2 := readCert(t, filepath.Join(k2, "pki", "apiserver.crt"))
	if !containsIP(api2.IPAddresses, "127.0.0.2") || !containsIP(api2.IPAddresses, "172.24.0.1") || containsIP(api2.IPAddresses, "192.168.0.1") || !slices.Contains(api2.DNSNames, "cp2") {
		t.Errorf("cp2 apiserver SANs %v %v", api2.DNSNames, api2.IPAddresses)
	}
	if p := readCert(t, filepath.Join(k2, "pki", "etcd", "peer.crt")); p.Subject.CommonName != "cp2" {
		t.Errorf("cp2 etcd peer certificate is %s's", p.Subject.CommonName)
	}
	// No backup of a key or certificate anywhere in the bundle (the
	// node's own backup keeps its old files).
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".bak") {
			t.Errorf("backup in the bundle: %s", p)
		}
		return nil
	})
	// cp1 moved from 10.0.0.10 (also kubeadm-config's endpoint) to
	// 127.0.0.1: every node's kubeconfigs are new, signed by the kept CA,
	// pointing at the new addresses (super-admin.conf on cp1 only).
	for i, m := range ms {
		kd := filepath.Join(out, bundle.KubeDir, m.Name)
		checkKubelet(t, kd, m)
		for _, f := range []string{"admin.conf", "controller-manager.conf", "scheduler.conf"} {
			kc, err := clientcmd.LoadFromFile(filepath.Join(kd, f))
			if err != nil {
				t.Fatalf("%s %s: %v", m.Name, f, err)
			}
			want := "https://" + m.AdvertiseAddress + ":6443"
			if f == "admin.conf" {
				want = "https://127.0.0.1:6443" // the endpoint, moved with cp1
			}
			for _, cl := range kc.Clusters {
				if cl.Server != want || string(cl.CertificateAuthorityData) != string(oldCA) {
					t.Errorf("%s %s: server %s (want %s), CA kept %v", m.Name, f, cl.Server, want, string(cl.CertificateAuthorityData) == string(oldCA))
				}
			}
		}
		if _, err := os.Stat(filepath.Join(kd, "super-admin.conf")); (err == nil) != (i == 0) {
			t.Errorf("%s: super-admin.conf present %v", m.Name, err == nil)
		}
	}
	checkManifests(t, k2, ms[1], ms)
	// The CA kept: the workers keep their kubelet.conf and only restart,
	// on each worker by name; kubectl runs on cp1, with its admin.conf, and
	// so do cluster restart and check, with cp1's copy of report.json.
	rb, err := os.ReadFile(filepath.Join(out, bundle.RunbookFile))
	if err != nil {
		t.Fatal(err)
	}
	checkRunbook(t, string(rb), out, rep, false, []string{"worker-hw1", "worker-vm1"}, "Start the kubelet on every worker node\nOn each worker: worker-hw1, worker-vm1:",
		"On cp1, with the kubeconfig of the previous step", "snapshift cluster restart --bundle "+bundle.NodeBundleDir+" --dry-run", "## Rollback")
	srvs := startMembers(t, out, ms)
	sec := decode(t, srvs[0], "/registry/secrets/kube-system/legacy-admin-token").(*corev1.Secret)
	if len(sec.Data["token"]) == 0 {
		t.Error("tokens cleared although sa.key was kept")
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := rebuild.Run(context.Background(), baseConfig(t, out, members(t, 1)), rebuild.Options{Now: fixedNow})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a non-empty output: %v", err)
	}
	// A refused transform leaves no bundle behind.
	out2 := filepath.Join(dir, "bundle2")
	cfg := baseConfig(t, out2, members(t, 1))
	cfg.Networking.ServiceCIDR = "172.24.0.0/28"
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Fatalf("a too small range: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("a failed rebuild left %d entries", len(entries))
	}
	// Dry run: nothing written.
	out3 := filepath.Join(dir, "bundle3")
	if _, err := rebuild.Run(context.Background(), baseConfig(t, out3, members(t, 1)), rebuild.Options{Now: fixedNow, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out3); !os.IsNotExist(err) {
		t.Error("a dry run wrote the bundle")
	}
}

// TestEtcdToken: the restored cluster's token is derived (the same for
// the same input and configuration, another for other members), and the
// old cluster's token is refused: etcd's default, or the one the old etcd
// manifest names (issue 45).
func TestEtcdToken(t *testing.T) {
	dir := t.TempDir()
	ms := members(t, 3)
	for i := range ms {
		ms[i].AdvertiseAddress = fmt.Sprintf("127.0.0.%d", i+1)
	}
	run := func(mod func(*rebuild.Config)) (*rebuild.Report, error) {
		cfg := baseConfig(t, filepath.Join(dir, "bundle"), ms)
		if mod != nil {
			mod(cfg)
		}
		return rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow, DryRun: true})
	}
	a, err := run(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Etcd.New.Token != b.Etcd.New.Token || a.Etcd.New.ClusterID != b.Etcd.New.ClusterID {
		t.Errorf("two rebuilds of one input: tokens %s and %s", a.Etcd.New.Token, b.Etcd.New.Token)
	}
	if len(a.Etcd.Old.Members) == 0 || a.Etcd.Old.Members[0].ID == "" {
		t.Errorf("report.json records no old member: %+v", a.Etcd.Old)
	}
	c, err := run(func(c *rebuild.Config) { c.Etcd.Members = c.Etcd.Members[:2] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Etcd.New.Token == a.Etcd.New.Token {
		t.Errorf("another member layout got the same token %s", c.Etcd.New.Token)
	}
	if _, err := run(func(c *rebuild.Config) { c.Etcd.InitialClusterToken = "etcd-cluster" }); err == nil ||
		!strings.Contains(err.Error(), `"etcd-cluster" is the old cluster's token (etcd's default`) {
		t.Errorf("etcd's default token: %v", err)
	}
	src := filepath.Join(dir, "manifests")
	copyDir(t, "../manifests/testdata/kubeadm-v1.36.3/ipv4", src)
	m := filepath.Join(src, "etcd.yaml")
	y, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	y = []byte(strings.Replace(string(y), "    - --initial-cluster=", "    - --initial-cluster-token=prod-etcd\n    - --initial-cluster=", 1))
	if err := os.WriteFile(m, y, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = run(func(c *rebuild.Config) { c.Manifests.Source = src; c.Etcd.InitialClusterToken = "prod-etcd" })
	if err == nil || !strings.Contains(err.Error(), `"prod-etcd" is the old cluster's token (`+m+`'s --initial-cluster-token)`) {
		t.Errorf("the old manifest's token: %v", err)
	}
	if d, err := run(func(c *rebuild.Config) { c.Manifests.Source = src; c.Etcd.InitialClusterToken = "etcd-cluster" }); err != nil {
		t.Errorf("etcd's default token where the old cluster had another: %v", err)
	} else if d.Etcd.New.Token != "etcd-cluster" {
		t.Errorf("the given token: %s", d.Etcd.New.Token)
	}
}

func readCertPEM(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func containsIP(ips []net.IP, s string) bool {
	for _, ip := range ips {
		if ip.String() == s {
			return true
		}
	}
	return false
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		o, err := os.OpenFile(filepath.Join(dst, e.Name()), os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(o, in)
		in.Close()
		o.Close()
	}
}

// snapshotTree is every file's path, mode and content under dir.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v\n", p, info.Mode())
		if info.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.Write(c)
		}
		return nil
	})
	return b.String()
}

// TestCustomEtcdPrefix: a cluster that kept its objects under
// --etcd-prefix /kubernetes.io is rebuilt under it: the restored member
// holds the migrated objects there, and every node's kube-apiserver
// manifest carries the flag, or the new apiserver would see an empty cluster.
func TestCustomEtcdPrefix(t *testing.T) {
	dir := t.TempDir()
	in := testfile.RewriteLiveKV(t, samplePath, filepath.Join(dir, "prefixed.db"), func(k string, v []byte) (string, []byte, error) {
		return strings.Replace(k, wellknown.DefaultPrefix, "/kubernetes.io/", 1), v, nil
	})
	out := filepath.Join(dir, "bundle")
	ms := members(t, 1)
	cfg := baseConfig(t, out, ms)
	cfg.Snapshot = in
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	api := podCommand(t, filepath.Join(out, bundle.KubeDir, "cp1", "manifests", "kube-apiserver.yaml"))
	if !slices.Contains(api, "--etcd-prefix=/kubernetes.io") {
		t.Errorf("kube-apiserver command %v lacks --etcd-prefix=/kubernetes.io", api)
	}
	srv := startMembers(t, out, ms)[0]
	svc, ok := decode(t, srv, "/kubernetes.io/services/specs/kube-system/kube-dns").(*corev1.Service)
	if !ok || svc.Spec.ClusterIP != "172.24.0.10" {
		t.Errorf("restored kube-dns under /kubernetes.io/: %+v", svc)
	}
}

// TestExistingCAKubeconfigs: with the existing CA, kubeconfigs are written
// only where an old one would name an address or endpoint that is gone:
// nothing when no node moves and the endpoint stays; every node's when the
// endpoint changes (admin.conf names it).
func TestExistingCAKubeconfigs(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint string
		want           bool
	}{
		{"nothing moves", "", false},
		{"new endpoint", "k8s-api.internal:6443", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "pki")
			if _, err := pki.GenerateAll(pki.Config{CertDir: src, ServiceCIDR: "192.168.0.0/16", NodeName: "cp1", AdvertiseAddress: "10.0.0.10"}); err != nil {
				t.Fatal(err)
			}
			ms := members(t, 1)
			cfg := baseConfig(t, filepath.Join(dir, "bundle"), ms)
			cfg.PKI.AdvertiseAddress = "10.0.0.10" // cp1 where the snapshot records it
			cfg.PKI.Source = src
			cfg.Networking.ControlPlaneEndpoint = tc.endpoint
			if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{}); err != nil {
				t.Fatal(err)
			}
			kd := filepath.Join(dir, "bundle", bundle.KubeDir, "cp1")
			kc, err := clientcmd.LoadFromFile(filepath.Join(kd, "admin.conf"))
			if (err == nil) != tc.want {
				t.Fatalf("admin.conf written %v, want %v", err == nil, tc.want)
			}
			if !tc.want {
				return
			}
			for _, cl := range kc.Clusters {
				if cl.Server != "https://k8s-api.internal:6443" {
					t.Errorf("admin.conf server %s", cl.Server)
				}
			}
			checkKubelet(t, kd, cfg.Etcd.Members[0])
			// The new endpoint's DNS record or load balancer is a
			// numbered step before any apply.
			rb, _ := os.ReadFile(filepath.Join(dir, "bundle", bundle.RunbookFile))
			ep, apply := strings.Index(string(rb), "Point the new control-plane endpoint k8s-api.internal:6443 at the control-plane nodes, before any apply"), strings.Index(string(rb), "Apply the bundle on every control-plane node")
			if ep < 0 || apply < ep || !regexp.MustCompile("(?m)^## \\d+\\. Point the new control-plane endpoint").Match(rb) ||
				!strings.Contains(string(rb), "- DNS: `k8s-api.internal` resolves to 10.0.0.10") {
				t.Errorf("RUNBOOK.md: the endpoint step (at %d) must be a step before apply (at %d):\n%s", ep, apply, rb)
			}
		})
	}
}

// TestJoinOnCgroupV1: a kubelet-config with failCgroupV1: false (nodes on
// cgroups v1, as the lab's) gets a join command that skips kubeadm's
// SystemVerification, which refuses cgroups v1 for kubelet 1.35+ unless
// skipped; the sample's (cgroups v2) does not.
func TestJoinOnCgroupV1(t *testing.T) {
	dir := t.TempDir()
	in := testfile.RewriteLiveKV(t, samplePath, filepath.Join(dir, "v1.db"), func(k string, v []byte) (string, []byte, error) {
		if k == wellknown.KeyKubeletConfig {
			// the same length: the protobuf's lengths stay right
			v = bytes.Replace(v, []byte("cgroupDriver: systemd"), []byte("failCgroupV1:   false"), 1)
		}
		return k, v, nil
	})
	for _, c := range []struct {
		snap string
		skip bool
	}{{in, true}, {samplePath, false}} {
		out := filepath.Join(t.TempDir(), "bundle")
		cfg := baseConfig(t, out, members(t, 1))
		cfg.Snapshot = c.snap
		if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
			t.Fatal(err)
		}
		rb, err := os.ReadFile(filepath.Join(out, bundle.RunbookFile))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(rb), "kubeadm join ") && strings.Contains(string(rb), "--ignore-preflight-errors=SystemVerification"); got != c.skip {
			t.Errorf("%s: the join skips SystemVerification: %v, want %v", filepath.Base(c.snap), got, c.skip)
		}
	}
}

// checkPlaybooks runs the real ansible-playbook (Debian's ansible-core)
// on the bundle's rendered playbooks: --syntax-check, and the guard play
// (tag guard) against the bundle's own report.json (issue 46).
func checkPlaybooks(t *testing.T, out string) {
	t.Helper()
	pb := ansiblePlaybook(t, out)
	if pb == nil {
		t.Log("ansible-playbook is not installed (apt-get install ansible-core): the playbooks are not checked")
		return
	}
	for _, args := range [][]string{{"--syntax-check", "migrate.yml"}, {"--syntax-check", "rollback.yml"}, {"--syntax-check", "late-node.yml"},
		{"--limit", "localhost", "--tags", "guard", "migrate.yml"}} {
		if b, err := pb(args...); err != nil {
			t.Errorf("ansible-playbook %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
}

// ansiblePlaybook runs the real ansible-playbook in the bundle out's
// ansible/ with its inventory and a home of its own; nil when it is not
// installed (refused under CI, which installs it).
func ansiblePlaybook(t *testing.T, out string) func(args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("ansible-playbook")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ansible-playbook is missing: .ci/run installs Debian's ansible-core")
		}
		return nil
	}
	home := t.TempDir()
	return func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"-i", "inventory.ini"}, args...)...)
		cmd.Dir = filepath.Join(out, "ansible")
		cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"), "ANSIBLE_NOCOLOR=1")
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
}

// TestWindowFlags: the configuration's window section is what every node
// apply line of runbook.json says (and so what the playbooks run: their
// scripts are rendered from those blocks), and bad durations are refused
// naming the field and the form.
func TestWindowFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bundle")
	ms := members(t, 3)
	for i := range ms {
		ms[i].AdvertiseAddress = fmt.Sprintf("127.0.0.%d", i+1)
	}
	cfg := baseConfig(t, out, ms)
	cfg.Window = rebuild.Window{ApplyTimeout: "90s", RollbackAfter: "20m", RestartTimeout: "25m"}
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	rb, err := bundle.ReadRunbook(filepath.Join(out, bundle.RunbookJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if b := rb.Block("restart.run"); b == nil || !slices.ContainsFunc(b.Lines, func(l bundle.RunbookLine) bool {
		return strings.HasSuffix(l.Text, "snapshift cluster restart --bundle "+out+" --timeout 25m")
	}) {
		t.Errorf("runbook.json block restart.run does not carry window.restartTimeout: %+v", b)
	}
	for _, id := range []string{"apply.stop", "apply.start"} {
		b := rb.Block(id)
		if b == nil || len(b.Lines) != 3 {
			t.Fatalf("runbook.json block %s: %+v", id, b)
		}
		for _, l := range b.Lines {
			if !strings.Contains(l.Text, " --timeout 90s --rollback-after 20m") {
				t.Errorf("block %s line %q: not the configuration's window", id, l.Text)
			}
		}
	}
	scripts, err := filepath.Glob(filepath.Join(out, "ansible", "scripts", "apply.start", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no playbook script for apply.start in %s/ansible (%v)", out, err)
	}
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil || !strings.Contains(string(data), "--timeout 90s --rollback-after 20m") {
			t.Errorf("playbook script %s does not carry the window's flags (%v):\n%s", s, err, data)
		}
	}
	if md, err := os.ReadFile(filepath.Join(out, "RUNBOOK.md")); err != nil || !strings.Contains(string(md), "`window.rollbackAfter`): with `--rollback-after 20m`") {
		t.Errorf("RUNBOOK.md does not say where the deadline comes from (%v)", err)
	}

	for _, c := range []struct {
		w    rebuild.Window
		want string
	}{
		{rebuild.Window{ApplyTimeout: "5x"}, `window.applyTimeout: "5x" is not a duration of a second or more (e.g. 90s, 5m, 1h30m)`},
		{rebuild.Window{ApplyTimeout: "500ms"}, `window.applyTimeout: "500ms" is not a duration`},
		{rebuild.Window{RollbackAfter: "30"}, `window.rollbackAfter: "30" is not a duration`},
		{rebuild.Window{ApplyTimeout: "10m", RollbackAfter: "5m"}, "window.rollbackAfter 5m is shorter than window.applyTimeout 10m"},
		{rebuild.Window{RestartTimeout: "ten minutes"}, `window.restartTimeout: "ten minutes" is not a duration`},
	} {
		cfg := baseConfig(t, filepath.Join(t.TempDir(), "b"), members(t, 1))
		cfg.Window = c.w
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("window %+v: %v, want %q", c.w, err, c.want)
		}
	}
}

// TestRecoveryFromASurvivingMember (issue 51 item 7): the control plane
// was lost and what survived is a member's database, member/snap/db, with
// no sha256 trailer: read with skipHashCheck, with the ranges kept and a
// new PKI, rebuild marks the bundle a recovery (report.json's
// operation.recovery, which node apply reads) and the runbook's header
// says how that database is copied instead of how a planned migration's
// snapshot is taken.
func TestRecoveryFromASurvivingMember(t *testing.T) {
	dir := t.TempDir()
	ms := members(t, 1)
	first := filepath.Join(dir, "first")
	if _, err := rebuild.Run(context.Background(), baseConfig(t, first, ms), rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(first, "etcd", ms[0].Name, "member/snap/db") // a real member's database
	out := filepath.Join(dir, "bundle")
	cfg := baseConfig(t, out, ms)
	cfg.Snapshot, cfg.Networking = db, rebuild.Networking{}
	_, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
	if msg, _ := option.Render(err, rebuild.ConfigPath); err == nil || !strings.Contains(msg, "a raw member/snap/db that needs skipHashCheck") {
		t.Fatalf("a member's database without skipHashCheck: %v", err)
	}
	cfg.SkipHashCheck, cfg.Recovery = true, true
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, bundle.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep bundle.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Operation == nil || !rep.Operation.Recovery || !rep.Operation.CAChanged {
		t.Errorf("report.json's operation: %+v, want recovery and a new CA", rep.Operation)
	}
	rb, err := bundle.ReadRunbook(filepath.Join(out, bundle.RunbookJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if rb.Block("header.before-snapshot") != nil {
		t.Errorf("a recovery's runbook has the planned migration's pre-snapshot block")
	}
	blk := rb.Block("header.recover-db")
	if blk == nil {
		t.Fatal("the runbook has no block header.recover-db")
	}
	var lines []string
	for _, l := range blk.Lines {
		lines = append(lines, l.Text)
	}
	if want := "mkdir -p /backup && cp /var/lib/etcd/member/snap/db /backup/etcd.db   # on " + ms[0].Name; !slices.Contains(lines, want) {
		t.Errorf("block header.recover-db: %q, want the line %q", lines, want)
	}
}

package rebuild_test

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/rebuild"
)

func nodeName(m rebuild.Member) string {
	if m.NodeName != "" {
		return m.NodeName
	}
	return m.Name
}

// checkNodes checks a disaster-recovery bundle node by node: every
// certificate parses and chains to the CA shared by all nodes, the
// apiserver and etcd certificates and kubelet.conf carry the node's own
// name and address, keys are 0600, the manifests carry the node's flags.
// endpointHost is the control-plane endpoint's host, which every apiserver
// certificate holds.
func checkNodes(t *testing.T, out string, ms []rebuild.Member, endpointHost string) {
	t.Helper()
	first := filepath.Join(out, bundle.KubeDir, nodeName(ms[0]), "pki")
	for _, m := range ms {
		dir := filepath.Join(out, bundle.KubeDir, nodeName(m))
		for _, f := range []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key", "sa.key", "sa.pub"} {
			a, _ := os.ReadFile(filepath.Join(first, f))
			b, err := os.ReadFile(filepath.Join(dir, "pki", f))
			if err != nil || len(a) == 0 || string(a) != string(b) {
				t.Errorf("%s: %s is not the shared one (%v)", nodeName(m), f, err)
			}
		}
		checkChains(t, filepath.Join(dir, "pki"))
		checkModes(t, dir)
		api := readCert(t, filepath.Join(dir, "pki", "apiserver.crt"))
		if !containsIP(api.IPAddresses, m.AdvertiseAddress) || !containsIP(api.IPAddresses, "172.24.0.1") || !slices.Contains(api.DNSNames, nodeName(m)) {
			t.Errorf("%s: apiserver SANs %v %v: want its address %s, 172.24.0.1 and its name", nodeName(m), api.DNSNames, api.IPAddresses, m.AdvertiseAddress)
		}
		for _, o := range ms {
			if o.AdvertiseAddress != m.AdvertiseAddress && o.AdvertiseAddress != endpointHost && containsIP(api.IPAddresses, o.AdvertiseAddress) {
				t.Errorf("%s: apiserver certificate holds %s's address %s", nodeName(m), nodeName(o), o.AdvertiseAddress)
			}
		}
		for _, f := range []string{"etcd/server.crt", "etcd/peer.crt"} {
			c := readCert(t, filepath.Join(dir, "pki", f))
			if c.Subject.CommonName != nodeName(m) || !containsIP(c.IPAddresses, m.AdvertiseAddress) || !slices.Contains(c.DNSNames, nodeName(m)) {
				t.Errorf("%s: %s CN %q SANs %v %v", nodeName(m), f, c.Subject.CommonName, c.DNSNames, c.IPAddresses)
			}
		}
		_, err := os.Stat(filepath.Join(dir, "super-admin.conf"))
		if first := m.Name == ms[0].Name; first != (err == nil) {
			t.Errorf("%s: super-admin.conf present %v, want only on the first node", nodeName(m), err == nil)
		}
		checkKubelet(t, dir, m)
		checkManifests(t, dir, m, ms)
	}
}

// checkChains verifies every leaf against the CA it belongs to.
func checkChains(t *testing.T, pkiDir string) {
	t.Helper()
	issuer := map[string]string{"apiserver": "ca", "apiserver-kubelet-client": "ca", "front-proxy-client": "front-proxy-ca",
		"etcd/server": "etcd/ca", "etcd/peer": "etcd/ca", "etcd/healthcheck-client": "etcd/ca", "apiserver-etcd-client": "etcd/ca"}
	for leaf, ca := range issuer {
		pool := x509.NewCertPool()
		pool.AddCert(readCert(t, filepath.Join(pkiDir, ca+".crt")))
		c := readCert(t, filepath.Join(pkiDir, leaf+".crt"))
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, CurrentTime: fixedNow()}); err != nil {
			t.Errorf("%s/%s.crt does not chain to %s.crt: %v", pkiDir, leaf, ca, err)
		}
	}
}

// checkModes: every key, kubeconfig and encryption config is 0600.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	n := 0
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && (strings.HasSuffix(p, ".key") || strings.HasSuffix(p, ".conf") || strings.Contains(p, "encryption")) && info.Mode().IsRegular() {
			n++
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", p, info.Mode().Perm())
			}
		}
		return nil
	})
	if n < 10 {
		t.Errorf("%s: only %d keys and kubeconfigs", dir, n)
	}
}

func checkKubelet(t *testing.T, dir string, m rebuild.Member) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, "kubelet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		c := readCertPEM(t, ai.ClientCertificateData)
		if c.Subject.CommonName != "system:node:"+nodeName(m) || !slices.Equal(c.Subject.Organization, []string{"system:nodes"}) {
			t.Errorf("%s: kubelet.conf is %s %v", nodeName(m), c.Subject.CommonName, c.Subject.Organization)
		}
	}
	for _, cl := range kc.Clusters {
		if cl.Server != "https://"+m.AdvertiseAddress+":6443" {
			t.Errorf("%s: kubelet.conf server %s", nodeName(m), cl.Server)
		}
	}
}

// podCommand reads a manifest back as a Pod and returns its command.
func podCommand(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pod.Spec.Containers[0].Command
}

func checkManifests(t *testing.T, dir string, m rebuild.Member, ms []rebuild.Member) {
	t.Helper()
	var ic []string
	for _, o := range ms {
		ic = append(ic, nodeName(o)+"="+o.PeerURL) // members named after their nodes, as kubeadm's
	}
	api := podCommand(t, filepath.Join(dir, "manifests", "kube-apiserver.yaml"))
	etcd := podCommand(t, filepath.Join(dir, "manifests", "etcd.yaml"))
	for _, want := range []struct {
		cmd  []string
		flag string
	}{
		{api, "--advertise-address=" + m.AdvertiseAddress},
		{etcd, "--name=" + nodeName(m)},
		{etcd, "--initial-cluster=" + strings.Join(ic, ",")},
		{etcd, "--initial-advertise-peer-urls=" + m.PeerURL},
		{etcd, "--advertise-client-urls=" + m.ClientURL},
	} {
		if !slices.Contains(want.cmd, want.flag) {
			t.Errorf("%s: no %s in %v", nodeName(m), want.flag, want.cmd)
		}
	}
}

package rebuild_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/rebuild"
)

// The same cluster settings in kubeadm's two forms: v1beta3 (extraArgs a
// map) and v1beta4 (a list). advertise-address and initial-cluster are
// per-node values the rebuild must override.
const (
	clusterConfigV1beta3 = `apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.30.14
controlPlaneEndpoint: cp.example.internal:6443
networking: {serviceSubnet: 192.168.0.0/16, podSubnet: 10.244.0.0/16, dnsDomain: cluster.local}
apiServer:
  certSANs: [api.example.com, 203.0.113.7]
  extraArgs:
    audit-policy-file: /etc/kubernetes/audit/policy.yaml
    audit-log-path: /var/log/kubernetes/audit.log
    service-node-port-range: 30000-32000
    oidc-ca-file: /etc/ssl/oidc/ca.pem
    advertise-address: 10.9.9.9
  extraVolumes:
  - {name: audit, hostPath: /etc/kubernetes/audit, mountPath: /etc/kubernetes/audit, readOnly: true, pathType: DirectoryOrCreate}
controllerManager:
  extraArgs: {terminated-pod-gc-threshold: "100"}
scheduler:
  extraArgs: {bind-address: 0.0.0.0}
etcd:
  local:
    dataDir: /var/lib/etcd
    extraArgs: {quota-backend-bytes: "8589934592", initial-cluster: "old=https://10.9.9.9:2380"}
    serverCertSANs: [etcd.example.internal]
`
	clusterConfigV1beta4 = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.34.2
controlPlaneEndpoint: cp.example.internal:6443
networking: {serviceSubnet: 192.168.0.0/16, podSubnet: 10.244.0.0/16, dnsDomain: cluster.local}
apiServer:
  certSANs: [api.example.com, 203.0.113.7]
  extraArgs:
  - {name: audit-policy-file, value: /etc/kubernetes/audit/policy.yaml}
  - {name: audit-log-path, value: /var/log/kubernetes/audit.log}
  - {name: service-node-port-range, value: 30000-32000}
  - {name: oidc-ca-file, value: /etc/ssl/oidc/ca.pem}
  - {name: advertise-address, value: 10.9.9.9}
  - {name: encryption-provider-config, value: /etc/kubernetes/secrets/enc.yaml}
  extraVolumes:
  - {name: audit, hostPath: /etc/kubernetes/audit, mountPath: /etc/kubernetes/audit, readOnly: true, pathType: DirectoryOrCreate}
  - {name: secrets, hostPath: /etc/kubernetes/secrets, mountPath: /etc/kubernetes/secrets, readOnly: true, pathType: DirectoryOrCreate}
controllerManager:
  extraArgs: [{name: terminated-pod-gc-threshold, value: "100"}]
scheduler:
  extraArgs: [{name: bind-address, value: 0.0.0.0}]
etcd:
  local:
    dataDir: /var/lib/etcd
    extraArgs: [{name: quota-backend-bytes, value: "8589934592"}, {name: initial-cluster, value: "old=https://10.9.9.9:2380"}]
    serverCertSANs: [etcd.example.internal]
featureGates: {ControlPlaneKubeletLocalMode: true}
`
	encryptionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - {name: key1, secret: c25hcHNoaWZ0LXRlc3Qta2V5LTMyLWJ5dGVzLWxvbmc=}
  - identity: {}
`
)

func TestParseClusterConfigurationBothForms(t *testing.T) {
	for _, doc := range []string{clusterConfigV1beta3, clusterConfigV1beta4} {
		cc, err := rebuild.ParseClusterConfiguration([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		args := cc.APIServer.ExtraArgs
		if !slices.Contains(args, manifests.Arg{Name: "service-node-port-range", Value: "30000-32000"}) ||
			!slices.Contains(cc.Etcd.Local.ExtraArgs, manifests.Arg{Name: "quota-backend-bytes", Value: "8589934592"}) ||
			len(cc.APIServer.ExtraVolumes) == 0 || cc.APIServer.ExtraVolumes[0].MountPath != "/etc/kubernetes/audit" ||
			!slices.Equal(cc.APIServer.CertSANs, []string{"api.example.com", "203.0.113.7"}) {
			t.Errorf("%s: %+v", cc.APIVersion, cc)
		}
	}
	// v1beta3's map is read sorted by name, as kubeadm writes it.
	cc, _ := rebuild.ParseClusterConfiguration([]byte(clusterConfigV1beta3))
	if !slices.IsSortedFunc(cc.APIServer.ExtraArgs, func(a, b manifests.Arg) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("v1beta3 extraArgs not sorted: %v", cc.APIServer.ExtraArgs)
	}
	if _, err := rebuild.ParseClusterConfiguration([]byte("apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n")); err == nil {
		t.Error("v1beta2 accepted")
	}
	if _, err := rebuild.ParseClusterConfiguration([]byte("apiVersion: kubeadm.k8s.io/v1beta4\napiServer: {extraArgs: 3}\n")); err == nil {
		t.Error("extraArgs: 3 accepted")
	}
}

// withClusterConfiguration writes a copy of the sample whose kubeadm-config
// holds doc, encoded as the apiserver stores a ConfigMap.
func withClusterConfiguration(t *testing.T, doc, dst string) string {
	t.Helper()
	c := codec.New()
	return testfile.RewriteLive(t, samplePath, dst, func(key string, value []byte) ([]byte, error) {
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
	})
}

// TestCarriedClusterConfiguration: a DR rebuild of two nodes from a
// snapshot whose kubeadm-config carries extraArgs, extraVolumes and SANs
// (v1beta3 and v1beta4) and an encryption configuration: every node's
// manifests carry the cluster's flags with its own per-node values, the
// encryption config is in the bundle (0600) and mounted, the files the
// bundle lacks are listed.
func TestCarriedClusterConfiguration(t *testing.T) {
	for _, tc := range []struct{ name, doc, encPath string }{
		{"v1beta3", clusterConfigV1beta3, rebuild.DefaultEncryptionConfigPath},
		{"v1beta4", clusterConfigV1beta4, "/etc/kubernetes/secrets/enc.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			enc := filepath.Join(dir, "enc.yaml")
			if err := os.WriteFile(enc, []byte(encryptionConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			ms := members(t, 2)
			ms[0].AdvertiseAddress, ms[1].AdvertiseAddress = "127.0.0.1", "127.0.0.2"
			cfg := baseConfig(t, filepath.Join(dir, "bundle"), ms)
			cfg.Snapshot = withClusterConfiguration(t, tc.doc, filepath.Join(dir, "in.db"))
			cfg.EncryptionConfig = enc
			rep, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				checkCarried(t, filepath.Join(dir, "bundle"), m, tc.encPath)
			}
			var missing []string
			for _, f := range rep.MissingFiles {
				missing = append(missing, f.Flag+"="+f.Path)
			}
			want := []string{"--audit-policy-file=/etc/kubernetes/audit/policy.yaml", "--oidc-ca-file=/etc/ssl/oidc/ca.pem"}
			if !slices.Equal(missing, want) {
				t.Errorf("missing files %v, want %v", missing, want)
			}
			rb, _ := os.ReadFile(filepath.Join(dir, "bundle", bundle.RunbookFile))
			for _, w := range []string{"`/etc/ssl/oidc/ca.pem` (kube-apiserver --oidc-ca-file)", filepath.Join(dir, "bundle", "kubernetes", "cp2") + " root@"} {
				if !strings.Contains(string(rb), w) {
					t.Errorf("RUNBOOK.md does not say %q", w)
				}
			}
		})
	}
}

func checkCarried(t *testing.T, out string, m rebuild.Member, encPath string) {
	t.Helper()
	dir := filepath.Join(out, bundle.KubeDir, m.Name)
	b, err := os.ReadFile(filepath.Join(dir, "manifests", "kube-apiserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatal(err)
	}
	api := pod.Spec.Containers[0].Command
	for _, f := range []string{"--audit-policy-file=/etc/kubernetes/audit/policy.yaml", "--service-node-port-range=30000-32000",
		"--oidc-ca-file=/etc/ssl/oidc/ca.pem", "--advertise-address=" + m.AdvertiseAddress, "--encryption-provider-config=" + encPath,
		"--service-cluster-ip-range=172.24.0.0/16"} {
		if !slices.Contains(api, f) {
			t.Errorf("%s kube-apiserver: no %s in %v", m.Name, f, api)
		}
	}
	if slices.Contains(api, "--advertise-address=10.9.9.9") {
		t.Errorf("%s: kubeadm-config's advertise-address kept", m.Name)
	}
	mountedAt := map[string]bool{}
	for _, vm := range pod.Spec.Containers[0].VolumeMounts {
		mountedAt[vm.MountPath] = true
	}
	if !mountedAt["/etc/kubernetes/audit"] || !mountedAt[filepath.Dir(encPath)] {
		t.Errorf("%s: mounts %v", m.Name, mountedAt)
	}
	rel, _ := filepath.Rel("/etc/kubernetes", encPath)
	if st, err := os.Stat(filepath.Join(dir, rel)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: encryption config in the bundle: %v %v", m.Name, st, err)
	} else if got, _ := os.ReadFile(filepath.Join(dir, rel)); string(got) != encryptionConfig {
		t.Errorf("%s: encryption config differs", m.Name)
	}
	if !slices.Contains(podCommand(t, filepath.Join(dir, "manifests", "kube-controller-manager.yaml")), "--terminated-pod-gc-threshold=100") ||
		!slices.Contains(podCommand(t, filepath.Join(dir, "manifests", "kube-scheduler.yaml")), "--bind-address=0.0.0.0") {
		t.Errorf("%s: controller-manager or scheduler extraArgs not carried", m.Name)
	}
	etcd := podCommand(t, filepath.Join(dir, "manifests", "etcd.yaml"))
	if !slices.Contains(etcd, "--quota-backend-bytes=8589934592") || slices.Contains(etcd, "--initial-cluster=old=https://10.9.9.9:2380") {
		t.Errorf("%s: etcd %v", m.Name, etcd)
	}
	api2 := readCert(t, filepath.Join(dir, "pki", "apiserver.crt"))
	if !slices.Contains(api2.DNSNames, "api.example.com") || !slices.Contains(api2.DNSNames, "cp.example.internal") || !containsIP(api2.IPAddresses, "203.0.113.7") {
		t.Errorf("%s: apiserver SANs %v %v", m.Name, api2.DNSNames, api2.IPAddresses)
	}
	if srv := readCert(t, filepath.Join(dir, "pki", "etcd", "server.crt")); !slices.Contains(srv.DNSNames, "etcd.example.internal") {
		t.Errorf("%s: etcd server SANs %v", m.Name, srv.DNSNames)
	}
}

// clusterConfigCustom sets every cluster-wide value kubeadm takes from
// kubeadm-config for certificates, kubeconfigs and manifests to something
// other than its default.
const clusterConfigCustom = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.34.2
clusterName: prod-eu
controlPlaneEndpoint: 10.0.0.10:6443
certificatesDir: /etc/kubernetes/pki
encryptionAlgorithm: ECDSA-P256
certificateValidityPeriod: 2160h0m0s
caCertificateValidityPeriod: 43800h0m0s
networking: {serviceSubnet: 192.168.0.0/16, podSubnet: 10.244.0.0/16, dnsDomain: corp.example}
apiServer:
  extraEnvs: [{name: API_ONLY, value: a}, {name: SHARED, value: api}]
controllerManager:
  extraEnvs: [{name: KCM_ONLY, value: k}, {name: SHARED, value: kcm}]
scheduler:
  extraEnvs: [{name: SCHED_ONLY, value: s}]
etcd:
  local:
    dataDir: /data/etcd
    extraEnvs: [{name: ETCD_ONLY, value: e}]
`

// TestCustomClusterConfiguration: a DR rebuild of a cluster whose
// kubeadm-config sets the DNS domain, etcd data dir, key algorithm,
// certificate lifetimes, cluster name and per-component environment:
// every certificate, key, kubeconfig and manifest is what kubeadm would
// render for that configuration.
func TestCustomClusterConfiguration(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle")
	ms := members(t, 2)
	ms[0].AdvertiseAddress, ms[1].AdvertiseAddress = "127.0.0.1", "127.0.0.2"
	cfg := baseConfig(t, out, ms)
	cfg.Snapshot = withClusterConfiguration(t, clusterConfigCustom, filepath.Join(dir, "in.db"))
	rep, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		kd := filepath.Join(out, bundle.KubeDir, m.Name)
		// networking.dnsDomain: the apiserver certificate and the issuer.
		api := readCert(t, filepath.Join(kd, "pki", "apiserver.crt"))
		if !slices.Contains(api.DNSNames, "kubernetes.default.svc.corp.example") || slices.Contains(api.DNSNames, "kubernetes.default.svc.cluster.local") {
			t.Errorf("%s: apiserver DNS SANs %v", m.Name, api.DNSNames)
		}
		apiCmd := podCommand(t, filepath.Join(kd, "manifests", "kube-apiserver.yaml"))
		if !slices.Contains(apiCmd, "--service-account-issuer=https://kubernetes.default.svc.corp.example") {
			t.Errorf("%s: kube-apiserver %v", m.Name, apiCmd)
		}
		// etcd.local.dataDir: flag and hostPath volume.
		etcd := readPod(t, filepath.Join(kd, "manifests", "etcd.yaml"))
		if !slices.Contains(etcd.Spec.Containers[0].Command, "--data-dir=/data/etcd") {
			t.Errorf("%s: etcd %v", m.Name, etcd.Spec.Containers[0].Command)
		}
		for _, v := range etcd.Spec.Volumes {
			if v.Name == "etcd-data" && v.HostPath.Path != "/data/etcd" {
				t.Errorf("%s: etcd-data volume at %s", m.Name, v.HostPath.Path)
			}
		}
		// extraEnvs: each component its own, merged and sorted.
		for comp, want := range map[string]string{
			"kube-apiserver":          "API_ONLY=a SHARED=api",
			"kube-controller-manager": "KCM_ONLY=k SHARED=kcm",
			"kube-scheduler":          "SCHED_ONLY=s",
			"etcd":                    "ETCD_ONLY=e",
		} {
			var got []string
			for _, e := range readPod(t, filepath.Join(kd, "manifests", comp+".yaml")).Spec.Containers[0].Env {
				got = append(got, e.Name+"="+e.Value)
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%s %s: env %v, want %s", m.Name, comp, got, want)
			}
		}
		// encryptionAlgorithm, the validity periods: every key ECDSA
		// P-256, leaves 90 days, CAs five years.
		checkKeysAndValidity(t, kd, 2160*time.Hour, 43800*time.Hour)
		// clusterName: every kubeconfig's cluster and context.
		for _, f := range []string{"admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
			kc, err := clientcmd.LoadFromFile(filepath.Join(kd, f))
			if err != nil {
				t.Fatal(err)
			}
			ctx := kc.Contexts[kc.CurrentContext]
			if _, ok := kc.Clusters["prod-eu"]; !ok || ctx == nil || ctx.Cluster != "prod-eu" || !strings.HasSuffix(kc.CurrentContext, "@prod-eu") {
				t.Errorf("%s %s: clusters %v, context %q", m.Name, f, slices.Collect(maps.Keys(kc.Clusters)), kc.CurrentContext)
			}
		}
		if i == 0 {
			if !slices.Contains(podCommand(t, filepath.Join(kd, "manifests", "kube-controller-manager.yaml")), "--cluster-name=prod-eu") {
				t.Errorf("kube-controller-manager has no --cluster-name=prod-eu")
			}
		}
	}
	// etcd.local.dataDir: where node apply restores, and the runbook.
	if rep.Operation.EtcdDataDir != "/data/etcd" {
		t.Errorf("report.json operation.etcdDataDir %q", rep.Operation.EtcdDataDir)
	}
	rb, _ := os.ReadFile(filepath.Join(out, bundle.RunbookFile))
	if !strings.Contains(string(rb), "(the etcd data dir `/data/etcd` is moved there)") || strings.Contains(string(rb), "/var/lib/etcd") {
		t.Errorf("RUNBOOK.md does not name /data/etcd alone")
	}
	// report.json says where the extraEnvs went.
	for _, want := range []string{
		"apiServer: 0 extraArgs, 0 extraVolumes, 2 extraEnvs carried into that component's generated manifest",
		"controllerManager: 0 extraArgs, 0 extraVolumes, 2 extraEnvs carried into that component's generated manifest",
		"scheduler: 0 extraArgs, 0 extraVolumes, 1 extraEnvs carried into that component's generated manifest",
		"etcd.local: 0 extraArgs, 1 extraEnvs carried into that component's generated manifest (member flags are this rebuild's)",
	} {
		if !slices.Contains(rep.ClusterConfiguration, want) {
			t.Errorf("report.json clusterConfiguration lacks %q: %q", want, rep.ClusterConfiguration)
		}
	}
}

// checkKeysAndValidity: every private key under a node's directory (PKI
// and kubeconfigs) is ECDSA P-256; leaves expire leaf after fixedNow,
// CAs ca after it.
func checkKeysAndValidity(t *testing.T, kd string, leaf, ca time.Duration) {
	t.Helper()
	n := 0
	filepath.WalkDir(kd, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		switch {
		case strings.HasSuffix(p, ".key"):
			n++
			if !strings.Contains(string(b), "BEGIN EC PRIVATE KEY") {
				t.Errorf("%s is not an EC key", p)
			}
			if k, err := keyutil.ParsePrivateKeyPEM(b); err != nil || !isP256(k) {
				t.Errorf("%s: not ECDSA P-256 (%v)", p, err)
			}
		case strings.HasSuffix(p, ".crt"):
			c := readCert(t, p)
			want := fixedNow().Add(leaf)
			if c.IsCA {
				want = fixedNow().Add(ca)
			}
			if !c.NotAfter.Equal(want) {
				t.Errorf("%s: NotAfter %s, want %s", p, c.NotAfter, want)
			}
		case strings.HasSuffix(p, ".conf"):
			kc, err := clientcmd.LoadFromFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ai := range kc.AuthInfos {
				n++
				if k, err := keyutil.ParsePrivateKeyPEM(ai.ClientKeyData); err != nil || !isP256(k) {
					t.Errorf("%s: client key not ECDSA P-256 (%v)", p, err)
				}
				if c := readCertPEM(t, ai.ClientCertificateData); !c.NotAfter.Equal(fixedNow().Add(leaf)) {
					t.Errorf("%s: client certificate NotAfter %s", p, c.NotAfter)
				}
			}
		}
		return nil
	})
	if n < 12 {
		t.Errorf("%s: only %d keys", kd, n)
	}
}

func isP256(k any) bool {
	ek, ok := k.(*ecdsa.PrivateKey)
	return ok && ek.Curve == elliptic.P256()
}

// TestClusterConfigurationRefusals: what a rebuild cannot honour is
// refused before anything is written, naming the field.
func TestClusterConfigurationRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		edit      func(*rebuild.Config)
		want      string
	}{
		{"dnsDomain differs", clusterConfigCustom, func(c *rebuild.Config) { c.Networking.DNSDomain = "cluster.local" },
			`the rebuild file's networking.dnsDomain "cluster.local" differs from kubeadm-config's "corp.example"`},
		{"dataDir differs", clusterConfigCustom, func(c *rebuild.Config) { c.Etcd.DataDir = "/var/lib/etcd" },
			`the rebuild file's etcd.dataDir "/var/lib/etcd" differs from kubeadm-config's "/data/etcd"`},
		{"certificatesDir", strings.Replace(clusterConfigCustom, "certificatesDir: /etc/kubernetes/pki", "certificatesDir: /srv/pki", 1), nil,
			"kubeadm-config certificatesDir /srv/pki is not /etc/kubernetes/pki"},
		{"encryptionAlgorithm", strings.Replace(clusterConfigCustom, "ECDSA-P256", "ED25519", 1), nil,
			`kubeadm-config encryptionAlgorithm "ED25519" is not one of RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, ECDSA-P384`},
		{"rootless", clusterConfigCustom + "featureGates: {RootlessControlPlane: true}\n", nil,
			"kubeadm-config featureGates RootlessControlPlane: generated manifests run as root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := members(t, 1)
			cfg := baseConfig(t, filepath.Join(dir, tc.name, "bundle"), ms)
			cfg.Snapshot = withClusterConfiguration(t, tc.doc, filepath.Join(dir, tc.name+".db"))
			if tc.edit != nil {
				tc.edit(cfg)
			}
			_, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, migrate.ErrRefused) {
				t.Fatalf("error %v, want a refusal saying %q", err, tc.want)
			}
			if _, err := os.Stat(cfg.Output); !os.IsNotExist(err) {
				t.Errorf("a refused rebuild wrote %s", cfg.Output)
			}
		})
	}
}

func readPod(t *testing.T, path string) *corev1.Pod {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &pod
}

// TestServiceAccountIssuerKept: kubeadm-config's own
// --service-account-issuer (an extraArg) is the one the generated
// kube-apiserver runs with, alone: tokens issued before stay valid.
func TestServiceAccountIssuerKept(t *testing.T) {
	dir := t.TempDir()
	doc := strings.Replace(clusterConfigCustom, "apiServer:\n", "apiServer:\n  extraArgs: [{name: service-account-issuer, value: \"https://issuer.example\"}]\n", 1)
	ms := members(t, 1)
	cfg := baseConfig(t, filepath.Join(dir, "bundle"), ms)
	cfg.Snapshot = withClusterConfiguration(t, doc, filepath.Join(dir, "in.db"))
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	var issuers []string
	for _, a := range podCommand(t, filepath.Join(dir, "bundle", bundle.KubeDir, "cp1", "manifests", "kube-apiserver.yaml")) {
		if v, ok := strings.CutPrefix(a, "--service-account-issuer="); ok {
			issuers = append(issuers, v)
		}
	}
	if !slices.Equal(issuers, []string{"https://issuer.example"}) {
		t.Errorf("--service-account-issuer %v, want the cluster's https://issuer.example alone", issuers)
	}
}

package rebuild

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// ClusterConfiguration is the part of kubeadm's ClusterConfiguration
// (kube-system/kubeadm-config in the snapshot) a rebuild carries over.
//
// kubeadm's own types (k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm) are
// not importable as a normal module dependency (k8s.io/kubernetes needs a
// replace directive for every staging repository), so the fields are
// declared here with kubeadm's JSON names, for both v1beta3 and v1beta4:
// extraArgs is a map in v1beta3 and a list of {name, value} in v1beta4.
// Unknown fields are ignored.
type ClusterConfiguration struct {
	APIVersion           string `json:"apiVersion"`
	KubernetesVersion    string `json:"kubernetesVersion,omitempty"`
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty"`
	ImageRepository      string `json:"imageRepository,omitempty"`
	ClusterName          string `json:"clusterName,omitempty"`
	CertificatesDir      string `json:"certificatesDir,omitempty"`
	Networking           struct {
		ServiceSubnet string `json:"serviceSubnet,omitempty"`
		PodSubnet     string `json:"podSubnet,omitempty"`
		DNSDomain     string `json:"dnsDomain,omitempty"`
	} `json:"networking"`
	APIServer struct {
		ControlPlaneComponent `json:",inline"`
		CertSANs              []string `json:"certSANs,omitempty"`
	} `json:"apiServer"`
	ControllerManager ControlPlaneComponent `json:"controllerManager"`
	Scheduler         ControlPlaneComponent `json:"scheduler"`
	Etcd              struct {
		Local *struct {
			ImageRepository string          `json:"imageRepository,omitempty"`
			ImageTag        string          `json:"imageTag,omitempty"`
			DataDir         string          `json:"dataDir,omitempty"`
			ExtraArgs       ExtraArgs       `json:"extraArgs,omitempty"`
			ExtraEnvs       []corev1.EnvVar `json:"extraEnvs,omitempty"`
			ServerCertSANs  []string        `json:"serverCertSANs,omitempty"`
			PeerCertSANs    []string        `json:"peerCertSANs,omitempty"`
		} `json:"local,omitempty"`
		External *struct {
			Endpoints []string `json:"endpoints"`
		} `json:"external,omitempty"`
	} `json:"etcd"`
	// FeatureGates are kubeadm's own feature gates (not the components'):
	// reported, not turned into flags (PublicKeysECDSA picks the key
	// algorithm, as kubeadm's EncryptionAlgorithmType).
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// EncryptionAlgorithm is the type of every private key (v1beta4:
	// RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, ECDSA-P384).
	EncryptionAlgorithm string `json:"encryptionAlgorithm,omitempty"`
	// CertificateValidityPeriod and CACertificateValidityPeriod are the
	// lifetimes of new leaf and CA certificates (v1beta4).
	CertificateValidityPeriod   *metav1.Duration `json:"certificateValidityPeriod,omitempty"`
	CACertificateValidityPeriod *metav1.Duration `json:"caCertificateValidityPeriod,omitempty"`
}

// ControlPlaneComponent is kubeadm's per-component settings.
type ControlPlaneComponent struct {
	ExtraArgs    ExtraArgs                 `json:"extraArgs,omitempty"`
	ExtraVolumes []manifests.HostPathMount `json:"extraVolumes,omitempty"`
	ExtraEnvs    []corev1.EnvVar           `json:"extraEnvs,omitempty"`
}

// ExtraArgs are kubeadm's extraArgs in either form: a v1beta3 map (read
// sorted by name, as kubeadm v1beta3 writes them) or a v1beta4 list (order
// kept).
type ExtraArgs []manifests.Arg

// UnmarshalJSON accepts both forms.
func (a *ExtraArgs) UnmarshalJSON(b []byte) error {
	var list []manifests.Arg
	if err := json.Unmarshal(b, &list); err == nil {
		*a = list
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("extraArgs is neither a list of {name, value} (v1beta4) nor a map (v1beta3): %w", err)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]manifests.Arg, 0, len(m))
	for _, k := range names {
		out = append(out, manifests.Arg{Name: k, Value: m[k]})
	}
	*a = out
	return nil
}

// ParseClusterConfiguration reads kubeadm-config's ClusterConfiguration
// document (kubeadm.k8s.io/v1beta3 or v1beta4).
func ParseClusterConfiguration(doc []byte) (*ClusterConfiguration, error) {
	var cc ClusterConfiguration
	if err := yaml.Unmarshal(doc, &cc); err != nil {
		return nil, fmt.Errorf("kubeadm-config ClusterConfiguration: %w", err)
	}
	switch cc.APIVersion {
	case "kubeadm.k8s.io/v1beta3", "kubeadm.k8s.io/v1beta4":
	default:
		return nil, fmt.Errorf("kubeadm-config ClusterConfiguration: apiVersion %q is not kubeadm.k8s.io/v1beta3 or v1beta4", cc.APIVersion)
	}
	return &cc, nil
}

// recorded is what the snapshot says about the control plane.
type recorded struct {
	cc *ClusterConfiguration // nil when absent
	// addrs are the member nodes' recorded API server addresses.
	addrs map[string]netip.Addr
	// etcdPrefix is where the cluster keeps its objects (kube-apiserver's
	// --etcd-prefix), from where kubeadm-config is kept.
	etcdPrefix string
	// workloads is what the snapshot runs, for the restart.
	workloads *detected
	// nodeNames are every Node the snapshot lists (its /minions/ keys), sorted.
	nodeNames []string
	// cgroupV1 says the kubelet-config ConfigMap sets failCgroupV1: false:
	// the nodes run cgroups v1, and kubeadm join's SystemVerification
	// refuses them unless told to skip it (k8s.io/system-validators).
	cgroupV1 bool
	// oldEtcd is the old etcd cluster: the snapshot's members bucket.
	oldEtcd snapshot.ClusterIdentity
}

// readRecorded reads kube-system/kubeadm-config and the member nodes'
// recorded addresses from the input snapshot. The input is indexed for
// those keys only, and its hash is left to the transform phase, which
// checks it.
func readRecorded(ctx context.Context, path string, skipHash bool, enc *encryption.Config, nodes []string, oldToken string) (*recorded, error) {
	snap, err := snapshot.Open(path, snapshot.OpenOptions{Hash: snapshot.HashTrailerOnly, AllowNoTrailer: skipHash})
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	oldEtcd, err := snap.OldIdentity(oldToken)
	if err != nil {
		return nil, err
	}
	ix, err := snap.IndexFiltered(ctx, nil, func(k []byte) bool {
		s := string(k)
		return strings.HasSuffix(s, "/configmaps/kube-system/kubeadm-config") || strings.HasSuffix(s, "/configmaps/kube-system/kubelet-config") ||
			strings.Contains(s, "/pods/kube-system/kube-apiserver-") || strings.Contains(s, "/minions/") ||
			workloadKeys(s)
	})
	if err != nil {
		return nil, err
	}
	rec := &recorded{addrs: map[string]netip.Addr{}, etcdPrefix: wellknown.DefaultPrefix, oldEtcd: oldEtcd}
	for _, kr := range ix.LiveKeysWithPrefix("") {
		if p, ok := strings.CutSuffix(kr.Key, "configmaps/kube-system/kubeadm-config"); ok && strings.HasPrefix(p, "/") {
			rec.etcdPrefix = p
		}
		if _, name, ok := strings.Cut(kr.Key, "/minions/"); ok && name != "" && !strings.Contains(name, "/") {
			rec.nodeNames = append(rec.nodeNames, name)
		}
	}
	v := state.NewView(snap, ix, codec.New(), enc, rec.etcdPrefix)
	if rec.workloads, err = detectWorkloads(ctx, v); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		a, err := rules.RecordedAPIServerAddress(v, n)
		if err != nil {
			return nil, err
		}
		if a.IsValid() {
			rec.addrs[n] = a
		}
	}
	if o, ok, err := v.Get(wellknown.KeyKubeletConfig); err != nil {
		return nil, err
	} else if cm, isCM := configMap(o, ok); isCM {
		var kc struct {
			FailCgroupV1 *bool `json:"failCgroupV1"`
		}
		if yaml.Unmarshal([]byte(cm.Data["kubelet"]), &kc) == nil && kc.FailCgroupV1 != nil && !*kc.FailCgroupV1 {
			rec.cgroupV1 = true
		}
	}
	o, ok, err := v.Get(wellknown.KeyKubeadmConfig)
	if err != nil || !ok {
		return rec, err
	}
	cm, isCM := o.Value.Obj.(*corev1.ConfigMap)
	if !isCM || cm.Data["ClusterConfiguration"] == "" {
		return rec, nil
	}
	rec.cc, err = ParseClusterConfiguration([]byte(cm.Data["ClusterConfiguration"]))
	return rec, err
}

// configMap is o's ConfigMap, if ok and o is one.
func configMap(o *state.Object, ok bool) (*corev1.ConfigMap, bool) {
	if !ok || o == nil {
		return nil, false
	}
	cm, isCM := o.Value.Obj.(*corev1.ConfigMap)
	return cm, isCM
}

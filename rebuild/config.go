// Package rebuild runs snapshift's whole chain from one declarative file:
// plan, transform (with verification), restore of every etcd member,
// certificates and kubeconfigs, static-pod manifests, and a runbook of the
// steps that remain, into one output bundle laid out like /etc/kubernetes
// plus etcd/<member>/. The bundle is built under a temporary name and
// renamed into place only when every phase has succeeded.
package rebuild

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
)

// APIVersion and Kind of the configuration file.
const (
	APIVersion = "snapshift.io/v1alpha1"
	Kind       = "RebuildConfiguration"
)

// Config is the rebuild configuration file, in the spirit of kubeadm's.
type Config struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Snapshot is the etcd snapshot to rebuild from. Required.
	Snapshot      string `json:"snapshot"`
	SkipHashCheck bool   `json:"skipHashCheck,omitempty"`
	// EncryptionConfig is the apiserver's EncryptionConfiguration, when
	// values are encrypted at rest.
	EncryptionConfig string `json:"encryptionConfig,omitempty"`
	// Output is the bundle directory: it must not exist or be empty. Required.
	Output string `json:"output"`

	Networking Networking `json:"networking"`
	// ServiceAccountTokens is clear, delete or keep. Default: clear when a
	// new PKI (and so a new sa.key) is generated, keep otherwise.
	ServiceAccountTokens string `json:"serviceAccountTokens,omitempty"`

	Etcd      Etcd      `json:"etcd"`
	PKI       PKI       `json:"pki"`
	Manifests Manifests `json:"manifests"`
}

// Networking is the new networks (kubeadm's names). Its fields are the
// network rules' own options: their JSON names are the keys here, so a
// rule's new option is a key of this section without touching this file.
type Networking struct {
	// serviceSubnet (new service CIDR; empty: unchanged), oldServiceSubnet,
	// keepServiceIPs, dnsBridge, dnsService, repack: see snapshift plan --help.
	rules.ServiceCIDROptions
	// podSubnet (new pod CIDR; empty: unchanged), oldPodSubnet.
	rules.PodCIDROptions
	// leaveCNIState: CNIs whose IPAM state is moved by hand (calico, cilium).
	rules.CNIOptions
	// DNSDomain is the cluster domain. Default cluster.local.
	DNSDomain string `json:"dnsDomain,omitempty"`
}

// Etcd describes the new etcd cluster.
type Etcd struct {
	// Members of the new cluster, one data dir each. Required (at least one).
	Members []Member `json:"members"`
	// InitialClusterToken. Default "etcd-cluster".
	InitialClusterToken string `json:"initialClusterToken,omitempty"`
	// RevisionBump for every member. Default 1000000000 (always marked compacted).
	RevisionBump uint64 `json:"revisionBump,omitempty"`
	// DataDir is where the data dir goes on each node. Default /var/lib/etcd.
	DataDir string `json:"dataDir,omitempty"`
}

// Member is one etcd member (and control-plane node).
type Member struct {
	Name      string `json:"name"`
	PeerURL   string `json:"peerURL"`
	ClientURL string `json:"clientURL"`
}

// PKI says where certificates come from.
type PKI struct {
	// Source is an existing kubeadm certificate dir to reuse (its CA): the
	// apiserver certificate is reissued for the new service CIDR in a copy.
	// Empty: a whole new PKI (disaster recovery), with kubeconfigs.
	Source string `json:"source,omitempty"`
	// NodeName and AdvertiseAddress of the first control-plane node.
	NodeName         string `json:"nodeName"`
	AdvertiseAddress string `json:"advertiseAddress"`
	// ControlPlaneEndpoint is the shared endpoint, host[:port]. Optional.
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty"`
	// CertSANs are extra apiserver certificate SANs.
	CertSANs []string `json:"certSANs,omitempty"`
}

// Manifests says where static-pod manifests come from.
type Manifests struct {
	// Source is an existing manifests dir (/etc/kubernetes/manifests) whose
	// flags are rewritten. Empty: kubeadm-equivalent manifests are generated.
	Source string `json:"source,omitempty"`
	// KubernetesVersion for generated manifests, e.g. v1.36.3.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// ImageRepository for generated manifests. Default registry.k8s.io.
	ImageRepository string `json:"imageRepository,omitempty"`
}

// Load reads and checks a configuration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rebuild configuration: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("rebuild configuration %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("rebuild configuration %s: %w", path, err)
	}
	return &c, nil
}

// NewPKI reports whether a whole new PKI is generated.
func (c *Config) NewPKI() bool { return c.PKI.Source == "" }

// Validate fills defaults and checks the configuration, one clear sentence
// per problem.
func (c *Config) Validate() error {
	var errs []string
	add := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if c.APIVersion != APIVersion || c.Kind != Kind {
		add("apiVersion/kind must be %s %s (got %q %q)", APIVersion, Kind, c.APIVersion, c.Kind)
	}
	if c.Snapshot == "" {
		add("snapshot is required")
	}
	if c.Output == "" {
		add("output is required")
	}
	// The runbook names real paths: make them absolute.
	for _, p := range []*string{&c.Snapshot, &c.Output, &c.EncryptionConfig, &c.PKI.Source, &c.Manifests.Source} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	if c.Etcd.InitialClusterToken == "" {
		c.Etcd.InitialClusterToken = "etcd-cluster"
	}
	if c.Etcd.RevisionBump == 0 {
		c.Etcd.RevisionBump = snapshot.DefaultRevisionBump
	}
	if c.Etcd.DataDir == "" {
		c.Etcd.DataDir = "/var/lib/etcd"
	}
	if c.Networking.DNSService == "" {
		c.Networking.DNSService = "kube-system/kube-dns"
	}
	if c.Networking.DNSDomain == "" {
		c.Networking.DNSDomain = "cluster.local"
	}
	if len(c.Etcd.Members) == 0 {
		add("etcd.members needs at least one member")
	}
	seen := map[string]bool{}
	for i, m := range c.Etcd.Members {
		if m.Name == "" || seen[m.Name] {
			add("etcd.members[%d]: a unique name is required", i)
		}
		seen[m.Name] = true
		for _, u := range []struct{ f, v string }{{"peerURL", m.PeerURL}, {"clientURL", m.ClientURL}} {
			if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				add("etcd.members[%d].%s %q is not an http(s) URL", i, u.f, u.v)
			}
		}
	}
	if c.PKI.NodeName == "" {
		if len(c.Etcd.Members) > 0 {
			c.PKI.NodeName = c.Etcd.Members[0].Name
		}
	}
	if c.PKI.AdvertiseAddress == "" {
		add("pki.advertiseAddress is required (the first control-plane node's API address)")
	}
	switch c.ServiceAccountTokens {
	case "":
		if c.NewPKI() {
			c.ServiceAccountTokens = rules.SATokensClear // a new sa.key: old tokens are invalid
		} else {
			c.ServiceAccountTokens = "keep"
		}
	case rules.SATokensClear, rules.SATokensDelete, "keep":
	default:
		add("serviceAccountTokens must be clear, delete or keep, not %q", c.ServiceAccountTokens)
	}
	if c.NewPKI() && c.Manifests.Source == "" && c.Manifests.KubernetesVersion == "" {
		add("manifests.kubernetesVersion is required to generate manifests")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	// The rules' options, checked now so that --dry-run and every phase
	// start from a valid file; their errors name the option's field.
	return rules.Validate(c.RuleOptions())
}

// InitialCluster is etcd's --initial-cluster for the members.
func (c *Config) InitialCluster() string {
	var parts []string
	for _, m := range c.Etcd.Members {
		parts = append(parts, m.Name+"="+m.PeerURL)
	}
	return strings.Join(parts, ",")
}

// RuleOptions are the rule options this configuration selects.
func (c *Config) RuleOptions() rules.Options {
	o := rules.Options{ServiceCIDROptions: c.Networking.ServiceCIDROptions, PodCIDROptions: c.Networking.PodCIDROptions,
		CNIOptions: c.Networking.CNIOptions}
	if c.ServiceAccountTokens != "keep" {
		o.SATokens = c.ServiceAccountTokens
	}
	return o
}

// ConfigPath names an option field as this file does
// ("networking.oldServiceSubnet"): the rules' options by their registered
// config path, the others as below.
func ConfigPath(field string) string {
	switch field {
	case "SkipHashCheck":
		return "skipHashCheck"
	case "Encryption":
		return "encryptionConfig"
	case "RevisionBump":
		return "etcd.revisionBump"
	case "InitialCluster":
		return "etcd.members"
	}
	return rules.ConfigPath(field)
}

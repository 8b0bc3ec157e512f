// Package rebuild runs snapshift's whole chain from one declarative file:
// plan, transform (with verification), restore of every etcd member,
// certificates and kubeconfigs, static-pod manifests, and a runbook of the
// steps that remain, into one output bundle: kubernetes/<node>/ laid out
// like /etc/kubernetes for every control-plane node, plus etcd/<member>/. The bundle is built under a temporary name and
// renamed into place only when every phase has succeeded.
package rebuild

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/ansible"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/internal/strictyaml"
	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/option"
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
	// Recovery says the control plane was lost (every control-plane
	// node's /etc/kubernetes, or the node itself) and the snapshot is what
	// survived (a member's member/snap/db, with skipHashCheck): node apply
	// then accepts a control-plane node without /etc/kubernetes, its
	// static pods or an etcd data dir, and backs up what is left.
	Recovery bool `json:"recovery,omitempty"`
	// EncryptionConfig is the apiserver's EncryptionConfiguration, when
	// values are encrypted at rest.
	EncryptionConfig string `json:"encryptionConfig,omitempty"`
	// Output is the bundle directory: it must not exist or be empty. Required.
	Output string `json:"output"`

	Networking Networking `json:"networking"`
	// ServiceAccountTokens is clear, delete or keep. Default: clear when a
	// new PKI (and so a new sa.key) is generated, keep otherwise.
	ServiceAccountTokens string `json:"serviceAccountTokens,omitempty"`
	// Rules are user rules files (docs/RULES.md), run after the built-in
	// rules; their invariants are verified.
	Rules []string `json:"rules,omitempty"`

	Etcd      Etcd      `json:"etcd"`
	PKI       PKI       `json:"pki"`
	Manifests Manifests `json:"manifests"`
	// Ansible configures the playbooks rendered into the bundle's ansible/.
	Ansible Ansible `json:"ansible,omitzero"`
	// Installer names the operator's installer files to move with the
	// cluster (the bundle's installer/).
	Installer Installer `json:"installer,omitzero"`
	// Window sets the flags of the window's node apply lines (the runbook's
	// and so the playbooks').
	Window Window `json:"window,omitzero"`

	// File is the path the configuration was loaded from (Load sets it;
	// report.json's provenance names it and its sha256).
	File string `json:"-"`
}

// Networking is the new networks (kubeadm's names). Its keys are the
// rules' options whose rebuild-file path (rules.Option.Config) is
// "networking.<key>" (serviceSubnet, oldServiceSubnet, keepServiceIPs,
// dnsBridge, dnsService, repack, podSubnet, oldPodSubnet, leaveCNIState,
// controlPlaneEndpoint: see snapshift plan --help), read into Options by
// the registry, so a rule's new option is a key here without touching this
// file; and dnsDomain.
type Networking struct {
	rules.Options `json:"-"`
	// DNSDomain is the cluster domain. Default: kubeadm-config's
	// networking.dnsDomain, else cluster.local; another value than
	// kubeadm-config's is refused (a rebuild does not change the domain).
	DNSDomain string `json:"dnsDomain,omitempty"`
}

// fields are the section's keys and where each is read into.
func (n *Networking) fields() map[string]any {
	out := map[string]any{"dnsDomain": &n.DNSDomain}
	for _, opt := range rules.AllOptions(&n.Options) {
		if k, ok := strings.CutPrefix(opt.Config, "networking."); ok {
			out[k] = opt.Value
		}
	}
	return out
}

// Keys are the section's keys and their types, for the strict check of
// the rebuild file (strictyaml.Keyer).
func (n *Networking) Keys() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for k, v := range n.fields() {
		out[k] = reflect.TypeOf(v).Elem()
	}
	return out
}

// UnmarshalJSON reads the section's keys into the rules' options; an
// unknown key is an error.
func (n *Networking) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	fields := n.fields()
	for k, v := range raw {
		dst, ok := fields[k]
		for name, d := range fields {
			if !ok && strings.EqualFold(name, k) { // as encoding/json matches names
				dst, ok = d, true
			}
		}
		if !ok {
			return fmt.Errorf("networking.%s: unknown key", k)
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("networking.%s: %w", k, err)
		}
	}
	return nil
}

// MarshalJSON writes the keys that are set.
func (n Networking) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	for k, v := range n.fields() {
		if rv := reflect.ValueOf(v).Elem(); !rv.IsZero() {
			out[k] = rv.Interface()
		}
	}
	return json.Marshal(out)
}

// Etcd describes the new etcd cluster.
type Etcd struct {
	// Members of the new cluster, one data dir each. Required (at least one).
	Members []Member `json:"members"`
	// InitialClusterToken of the restored cluster. Default: derived from
	// the snapshot's checksum, the members and the networking section (a
	// new one for every rebuild, the same for every member of one bundle).
	// The old cluster's token (manifests.source's etcd
	// --initial-cluster-token, else etcd's default "etcd-cluster") is
	// refused: the restored members would get the old members' IDs.
	InitialClusterToken string `json:"initialClusterToken,omitempty"`
	// RevisionBump for every member. Default 1000000000 (always marked compacted).
	RevisionBump uint64 `json:"revisionBump,omitempty"`
	// DataDir is where the data dir goes on each node. Default:
	// kubeadm-config's etcd.local.dataDir, else /var/lib/etcd; another
	// value than kubeadm-config's is refused (the next kubeadm upgrade
	// would start etcd on kubeadm-config's).
	DataDir string `json:"dataDir,omitempty"`
}

// Member is one etcd member and, in kubeadm's stacked topology, the
// control-plane node it runs on: every member gets its own bundle directory
// kubernetes/<nodeName>/ with that node's certificates, kubeconfigs and
// manifests.
type Member struct {
	// Name names the member's data dir in the bundle (etcd/<name>). etcd
	// itself runs the member under NodeName, as kubeadm names every
	// stacked member after its node: the restore, --name and
	// --initial-cluster all use NodeName.
	Name      string `json:"name"`
	PeerURL   string `json:"peerURL"`
	ClientURL string `json:"clientURL"`
	// NodeName is the node's name (kubelet.conf's system:node:<nodeName>, a
	// DNS SAN of its apiserver and etcd certificates). Default: pki.nodeName
	// for the member named so (or the only member), else the member name.
	NodeName string `json:"nodeName,omitempty"`
	// AdvertiseAddress is the node's API server address (--advertise-address,
	// an IP SAN of its certificates). Default: pki.advertiseAddress for the
	// node named pki.nodeName, else the host of PeerURL (it must be an IP).
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
}

// Ansible configures the bundle's playbooks (package ansible).
type Ansible struct {
	// Serial is the workers' batch size: a percentage (1% to 100%) or a
	// count. Default 20%, kubespray's; ansible-playbook -e
	// snapshift_serial=N overrides it at run time.
	Serial string `json:"serial,omitempty"`
}

// Window is what the runbook's node apply lines carry: an operator who
// drives the window by the playbooks cannot edit them at run time.
type Window struct {
	// ApplyTimeout is each node apply's --timeout: it bounds each wait
	// (static pods stopping, etcd's quorum, kube-apiserver's /readyz).
	// Default 5m; give more on slow disks or a large etcd.
	ApplyTimeout string `json:"applyTimeout,omitempty"`
	// RollbackAfter, when set, adds --rollback-after to every node apply:
	// each control-plane node arms a systemd timer that rolls it back at
	// the deadline unless snapshift node confirm runs first. Default: none.
	RollbackAfter string `json:"rollbackAfter,omitempty"`
	// RestartTimeout is cluster restart's --timeout in the runbook: it
	// bounds each of its waits (a rollout, the DNS handover). Default 10m;
	// give more for DaemonSets on thousands of nodes.
	RestartTimeout string `json:"restartTimeout,omitempty"`
}

// DefaultApplyTimeout is window.applyTimeout's default.
const DefaultApplyTimeout = "5m"

// DefaultRestartTimeout is window.restartTimeout's default.
const DefaultRestartTimeout = "10m"

// PKI says where certificates come from.
type PKI struct {
	// Source is an existing kubeadm certificate dir to reuse (its CA): the
	// apiserver certificate is reissued for the new service CIDR in a copy.
	// Empty: a whole new PKI (disaster recovery), with kubeconfigs.
	Source string `json:"source,omitempty"`
	// NodeName and AdvertiseAddress of the first control-plane node (the
	// one whose certificates Source holds). Default: the first member's
	// node. With several members, give each its own in etcd.members.
	NodeName         string `json:"nodeName,omitempty"`
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	// ControlPlaneEndpoint is the shared endpoint, host[:port]. Optional;
	// networking.controlPlaneEndpoint says the same.
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
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("rebuild configuration %s does not exist: give a RebuildConfiguration file (see snapshift rebuild --help)", path)
	case err != nil && fsutil.IsDir(path):
		return nil, fmt.Errorf("rebuild configuration %s is a directory: give the RebuildConfiguration file", path)
	case err != nil:
		return nil, fmt.Errorf("rebuild configuration: %w", err)
	}
	if k := strictyaml.Kind(b); k == "RuleSet" {
		return nil, fmt.Errorf("%s is a RuleSet (a rules file): list it under rules: in a RebuildConfiguration, or give it to plan or transform --rules", path)
	}
	var c Config
	// Keys first, with yaml.v3's lines: sigs.k8s.io/yaml (which the json
	// tags need) matches keys case-insensitively and names no line.
	if err := strictyaml.Check(b, &c, "json"); err != nil {
		return nil, fmt.Errorf("rebuild configuration %s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		// What the check above leaves to the decoder (YAML syntax), in
		// the file's words.
		return nil, fmt.Errorf("rebuild configuration %s: %w", path, parseerr.Explain(err))
	}
	c.resolvePaths(filepath.Dir(path))
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("rebuild configuration %s: %w", path, err)
	}
	if c.File, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	return &c, nil
}

// resolvePaths makes the file's relative paths relative to its directory,
// as kubeconfig files do, not to the working directory.
func (c *Config) resolvePaths(dir string) {
	paths := []*string{&c.Snapshot, &c.Output, &c.EncryptionConfig, &c.PKI.Source, &c.Manifests.Source}
	for i := range c.Rules {
		paths = append(paths, &c.Rules[i])
	}
	for i := range c.Installer.Kubespray.GroupVars {
		paths = append(paths, &c.Installer.Kubespray.GroupVars[i])
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// NewPKI reports whether a whole new PKI is generated.
func (c *Config) NewPKI() bool { return c.PKI.Source == "" }

// Validate fills defaults and checks the configuration, one clear sentence
// per problem.
func (c *Config) Validate() error {
	var errs []string
	add := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if h := strictyaml.Header(c.APIVersion, c.Kind, APIVersion, Kind); h != "" {
		add("%s", h)
	}
	if c.Snapshot == "" {
		add("snapshot is required")
	}
	if c.Output == "" {
		add("output is required")
	}
	// The runbook names real paths: make them absolute.
	paths := []*string{&c.Snapshot, &c.Output, &c.EncryptionConfig, &c.PKI.Source, &c.Manifests.Source}
	for i := range c.Rules {
		paths = append(paths, &c.Rules[i])
	}
	for i := range c.Installer.Kubespray.GroupVars {
		paths = append(paths, &c.Installer.Kubespray.GroupVars[i])
	}
	for _, p := range paths {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	c.setDefaults()
	if len(c.Etcd.Members) == 0 {
		add("etcd.members needs at least one member")
	}
	if d := c.Networking.DNSDomain; d != "" && len(validation.IsDNS1123Subdomain(d)) > 0 {
		add("networking.dnsDomain: %q is not a valid DNS name", d)
	}
	if d := c.Etcd.DataDir; d != "" && !filepath.IsAbs(d) {
		add("etcd.dataDir %q is not an absolute path", d)
	}
	c.validateMembers(add)
	c.validateEndpoint(add)
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
	if v := c.Manifests.KubernetesVersion; v != "" {
		if err := manifests.CheckKubernetesVersion(v); err != nil {
			add("manifests.kubernetesVersion %v", err)
		}
	}
	if st, err := os.Stat(c.Output); err == nil && !st.IsDir() {
		add("output %s is a file: give a directory that does not exist or is empty", c.Output)
	}
	c.validateSources(add)
	if s := c.Ansible.Serial; s != "" {
		if err := ansible.CheckSerial(s); err != nil {
			add("ansible.serial: %v", err)
		}
	}
	c.validateWindow(add)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	// The rules' options, checked now so that --dry-run and every phase
	// start from a valid file; their errors name the option's field.
	return rules.Validate(c.RuleOptions())
}

func (c *Config) setDefaults() {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&c.Networking.DNSService, "kube-system/kube-dns")
	// etcd.dataDir and networking.dnsDomain default to kubeadm-config's,
	// read from the snapshot (the run's config phase).
	def(&c.Networking.Webhooks, rules.WebhooksList) // the runbook names the webhooks that would block the restart
	if c.Etcd.RevisionBump == 0 {
		c.Etcd.RevisionBump = snapshot.DefaultRevisionBump
	}
}

// validateWindow checks window's durations: node apply's --timeout and
// --rollback-after and cluster restart's --timeout take a Go duration, at
// least a second, and the deadline must leave apply its waits.
func (c *Config) validateWindow(add func(string, ...any)) {
	parse := func(field, v string) time.Duration {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			add("window.%s: %q is not a duration of a second or more (e.g. 90s, 5m, 1h30m)", field, v)
			return 0
		}
		return d
	}
	if c.Window.ApplyTimeout == "" {
		c.Window.ApplyTimeout = DefaultApplyTimeout
	}
	timeout := parse("applyTimeout", c.Window.ApplyTimeout)
	if c.Window.RestartTimeout == "" {
		c.Window.RestartTimeout = DefaultRestartTimeout
	}
	parse("restartTimeout", c.Window.RestartTimeout)
	if v := c.Window.RollbackAfter; v != "" {
		if after := parse("rollbackAfter", v); after > 0 && timeout > 0 && after < timeout {
			add("window.rollbackAfter %s is shorter than window.applyTimeout %s: the deadline would roll a node back while its apply still waits; give at least %s", v, c.Window.ApplyTimeout, c.Window.ApplyTimeout)
		}
	}
}

// validateMembers checks every member and fills its node name and
// advertise address; errors name the YAML path.
func (c *Config) validateMembers(add func(string, ...any)) {
	seen, nodes := map[string]bool{}, map[string]bool{}
	if len(c.Etcd.Members) == 0 {
		return
	}
	if first := c.Etcd.Members[0]; c.PKI.NodeName == "" {
		c.PKI.NodeName = first.NodeName
		if first.NodeName == "" {
			c.PKI.NodeName = first.Name
		}
	}
	named := map[string]int{}      // a member's name: its index
	listens := map[string]string{} // host:port: the member key that listens there
	for i := range c.Etcd.Members {
		m := &c.Etcd.Members[i]
		dupName := false
		if m.Name == "" {
			add("etcd.members[%d].name is missing: give every member a name (etcd's --name)", i)
		} else if j, ok := named[m.Name]; ok {
			add("etcd.members[%d].name %s is etcd.members[%d]'s too: give every member its own name", i, m.Name, j)
			dupName = true
		} else {
			named[m.Name] = i
		}
		seen[m.Name] = true
		for _, u := range []struct{ f, v string }{{"peerURL", m.PeerURL}, {"clientURL", m.ClientURL}} {
			p, err := url.Parse(u.v)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				add("etcd.members[%d].%s %q is not an http(s) URL", i, u.f, u.v)
				continue
			}
			// etcd listens on each URL: two on one address and port is a
			// member that cannot start, or two members that cannot both.
			key := fmt.Sprintf("etcd.members[%d].%s", i, u.f)
			if prev, ok := listens[p.Host]; ok {
				add("%s %s has the address and port of %s: give each its own (etcd's defaults: 2380 for peers, 2379 for clients)", key, u.v, prev)
			} else {
				listens[p.Host] = key
			}
		}
		if m.NodeName == "" && (dupName || m.Name == "") {
			continue // its node name would be the other member's: said above
		}
		if m.NodeName == "" {
			m.NodeName = m.Name
			if c.PKI.NodeName != "" && (m.Name == c.PKI.NodeName || len(c.Etcd.Members) == 1) {
				m.NodeName = c.PKI.NodeName
			}
		}
		if len(validation.IsDNS1123Subdomain(m.NodeName)) > 0 || nodes[m.NodeName] {
			add("etcd.members[%d].nodeName %q must be a unique DNS name", i, m.NodeName)
		}
		nodes[m.NodeName] = true
		if m.NodeName == c.PKI.NodeName && c.PKI.AdvertiseAddress != "" {
			if m.AdvertiseAddress == "" {
				m.AdvertiseAddress = c.PKI.AdvertiseAddress
			} else if m.AdvertiseAddress != c.PKI.AdvertiseAddress {
				add("etcd.members[%d].advertiseAddress %s and pki.advertiseAddress %s differ for node %s: give one", i, m.AdvertiseAddress, c.PKI.AdvertiseAddress, m.NodeName)
			}
		}
		if m.AdvertiseAddress == "" {
			if p, err := url.Parse(m.PeerURL); err == nil {
				m.AdvertiseAddress = p.Hostname()
			}
		}
		if a, err := netip.ParseAddr(m.AdvertiseAddress); err != nil || a.Zone() != "" {
			add("etcd.members[%d].advertiseAddress %q is not an IP address (the API server advertises an IP; give it when the peer URL names a host)", i, m.AdvertiseAddress)
		}
	}
	if !nodes[c.PKI.NodeName] {
		add("pki.nodeName %q is the node of no etcd member (give etcd.members[].nodeName)", c.PKI.NodeName)
	}
	for _, m := range c.Etcd.Members {
		if m.NodeName == c.PKI.NodeName {
			c.PKI.AdvertiseAddress = m.AdvertiseAddress
		}
	}
}

// validateSources checks, before any work, that pki.source holds a CA to
// reuse and that manifests.source is a directory.
func (c *Config) validateSources(add func(string, ...any)) {
	if s := c.PKI.Source; s != "" {
		for _, f := range []string{"ca.crt", "ca.key"} {
			if _, err := os.Stat(filepath.Join(s, f)); err != nil {
				add("pki.source %s has no %s: give kubeadm's certificate directory (/etc/kubernetes/pki), or no pki.source for a new PKI", s, f)
				break
			}
		}
	}
	if s := c.Manifests.Source; s != "" {
		if st, err := os.Stat(s); err != nil || !st.IsDir() {
			add("manifests.source %s is not a directory: give kubeadm's manifests directory (/etc/kubernetes/manifests), or no manifests.source to generate them", s)
		}
	}
}

// validateEndpoint checks the control-plane endpoint, given in either place.
func (c *Config) validateEndpoint(add func(string, ...any)) {
	n, p := c.Networking.ControlPlaneEndpoint, c.PKI.ControlPlaneEndpoint
	switch {
	case n != "" && p != "" && n != p:
		add("networking.controlPlaneEndpoint %q and pki.controlPlaneEndpoint %q differ: give one", n, p)
	case n == "":
		c.Networking.ControlPlaneEndpoint = p
	}
	c.PKI.ControlPlaneEndpoint = c.Networking.ControlPlaneEndpoint
	if e := c.Networking.ControlPlaneEndpoint; e != "" {
		host, port, err := net.SplitHostPort(e)
		if err != nil {
			host, port = e, "6443"
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" ||
			(len(validation.IsDNS1123Subdomain(host)) > 0 && net.ParseIP(host) == nil) {
			add("networking.controlPlaneEndpoint %q is not host[:port]", e)
		}
	}
}

// Node is one control-plane node of the rebuild: its etcd member, node
// name and advertise address.
type Node = Member

// Nodes are the control-plane nodes, in member order (after Validate).
func (c *Config) Nodes() []Node { return c.Etcd.Members }

// InitialCluster is etcd's --initial-cluster for the members, each named
// after its node as kubeadm names stacked etcd members (after Validate,
// which fills the node names).
func (c *Config) InitialCluster() string {
	var parts []string
	for _, m := range c.Etcd.Members {
		name := m.NodeName
		if name == "" {
			name = m.Name
		}
		parts = append(parts, name+"="+m.PeerURL)
	}
	return strings.Join(parts, ",")
}

// RuleOptions are the rule options this configuration selects: the
// networking section's, and those the file's other keys imply.
func (c *Config) RuleOptions() rules.Options {
	o := c.Networking.Options
	o.Rules = c.Rules
	// The control plane at its (possibly new) addresses and endpoint: the
	// control-plane-address rule moves what the snapshot records.
	o.ControlPlaneAddresses = nil
	for _, n := range c.Nodes() {
		if n.NodeName != "" && n.AdvertiseAddress != "" {
			o.ControlPlaneAddresses = append(o.ControlPlaneAddresses, n.NodeName+"="+n.AdvertiseAddress)
		}
	}
	if c.ServiceAccountTokens != "keep" {
		o.SATokens = c.ServiceAccountTokens
	}
	return o
}

// ConfigPath names an option field as this file does
// ("networking.oldServiceSubnet"): a rule's option by its registered
// config path, any other by its row in option.Library; a field the file
// does not set is said in words.
func ConfigPath(field string) string {
	if p := rules.ConfigPath(field); p != field {
		return p
	}
	if k, ok := option.Library().KeyName(field); ok {
		return k
	}
	return option.Words(field)
}

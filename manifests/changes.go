package manifests

import (
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
)

// Annotations kubeadm puts on the static Pods and reads back (kubeadm join
// and upgrade find the API endpoints and etcd members through them).
const (
	EtcdAdvertiseClientURLsAnnotation   = "kubeadm.kubernetes.io/etcd.advertise-client-urls"
	APIServerAdvertiseAddressAnnotation = "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"
)

// EtcdMember is this node's etcd member after the restore, as given to
// `etcdutl snapshot restore` (--name, --initial-advertise-peer-urls) and to
// etcd's --advertise-client-urls. Its fields are those of pki.EtcdMember, so
// one converts to the other.
type EtcdMember struct {
	// Name is the member name (etcd --name); kubeadm names members after
	// their node. Empty: unchanged.
	Name string `json:"name"`
	// PeerURL is the member's peer URL, e.g. https://10.0.0.5:2380: etcd
	// --initial-advertise-peer-urls and --listen-peer-urls. Empty: unchanged.
	PeerURL string `json:"peerURL,omitempty"`
	// ClientURL is the member's client URL, e.g. https://10.0.0.5:2379: etcd
	// --advertise-client-urls, --listen-client-urls (loopback entries kept)
	// and the etcd.advertise-client-urls annotation. Empty: unchanged.
	ClientURL string `json:"clientURL,omitempty"`
}

func (m EtcdMember) isZero() bool { return m == EtcdMember{} }

// Changes are the values a migration moves. A zero field changes nothing;
// a flag already at its new value is left alone and not reported. Each
// field names the manifests it needs: Update fails when one is missing.
type Changes struct {
	// ServiceCIDR is the new Service CIDR, comma-separated for dual stack
	// (primary family first): --service-cluster-ip-range of kube-apiserver
	// (added if absent) and of kube-controller-manager (replaced when
	// present; kubeadm sets it only with a Pod CIDR). Needs both manifests.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// PodCIDR is the new Pod CIDR, comma-separated for dual stack:
	// kube-controller-manager --cluster-cidr. --allocate-node-cidrs is never
	// added: when it is not already true, the cluster allocates node CIDRs
	// some other way and an absent --cluster-cidr stays absent (both
	// reported). The new range must hold node CIDRs of --node-cidr-mask-size
	// (default 24 for IPv4, 64 for IPv6) or kube-controller-manager would
	// exit at start. Needs kube-controller-manager.yaml.
	PodCIDR string `json:"podCIDR,omitempty"`
	// EtcdMember is this node's etcd member. Needs etcd.yaml.
	EtcdMember EtcdMember `json:"etcdMember,omitzero"`
	// InitialCluster is etcd's --initial-cluster ("name=peerURL,..."), as
	// given to etcdutl snapshot restore. Default, when the member's name or
	// peer URL changes: "<name>=<peer URL>", the single-member cluster a
	// restore makes; a manifest whose --initial-cluster lists several members
	// needs it given. It must list the member with its peer URLs. When the
	// membership changes, an --initial-cluster-state other than "new" (a
	// member that once joined) becomes "new"; an absent one (etcd's default
	// is new) stays absent. Needs etcd.yaml.
	InitialCluster string `json:"initialCluster,omitempty"`
	// InitialClusterToken is the restored cluster's token: a manifest's
	// --initial-cluster-token is set to it; an absent one (kubeadm writes
	// none) stays absent, since etcd reads a restored member's identity
	// from its data dir. Needs etcd.yaml when given.
	InitialClusterToken string `json:"initialClusterToken,omitempty"`
	// EtcdServers is kube-apiserver's --etcd-servers. Default: entries equal
	// to the etcd member's old client URL become its new ClientURL; other
	// entries (kubeadm's https://127.0.0.1:2379) stay. Needs
	// kube-apiserver.yaml when given.
	EtcdServers []string `json:"etcdServers,omitempty"`
	// DataDir is the host directory of the restored etcd data: etcd
	// --data-dir and the hostPath volume mounted there (kubeadm mounts the
	// data dir at the same path in the container, and then all three move; a
	// volume mounted at another container path only changes its host path).
	// Needs etcd.yaml.
	DataDir string `json:"dataDir,omitempty"`
	// AdvertiseAddress is the API server's new advertise address:
	// --advertise-address, the advertise-address.endpoint annotation (port
	// kept) and the probes that kubeadm points at the old address. Only when
	// asked: a Service CIDR change does not move it. Needs
	// kube-apiserver.yaml.
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
}

// Validate checks the format of every field that is set.
func (c Changes) Validate() error {
	var errs []error
	add := func(field string, err error) {
		if err != nil {
			errs = append(errs, option.Errorf(field, "{}: %w", err))
		}
	}
	if c.ServiceCIDR != "" {
		_, err := cidr.ParseUsable(c.ServiceCIDR)
		add("ServiceCIDR", err)
	}
	if c.PodCIDR != "" {
		_, err := cidr.ParseUsable(c.PodCIDR)
		add("PodCIDR", err)
	}
	if c.EtcdMember.Name != "" && strings.ContainsAny(c.EtcdMember.Name, "=, \t\n") {
		add("EtcdMember", fmt.Errorf("%q cannot hold '=', ',' or spaces", c.EtcdMember.Name))
	}
	if c.EtcdMember.PeerURL != "" {
		add("EtcdMember", checkURL(c.EtcdMember.PeerURL))
	}
	if c.EtcdMember.ClientURL != "" {
		add("EtcdMember", checkURL(c.EtcdMember.ClientURL))
	}
	if c.InitialCluster != "" {
		_, err := parseInitialCluster(c.InitialCluster)
		add("InitialCluster", err)
	}
	for _, s := range c.EtcdServers {
		add("EtcdServers", checkURL(s))
	}
	if c.DataDir != "" && (!filepath.IsAbs(c.DataDir) || filepath.Clean(c.DataDir) != c.DataDir) {
		add("DataDir", fmt.Errorf("%q is not a clean absolute path", c.DataDir))
	}
	if c.AdvertiseAddress != "" {
		a, err := netip.ParseAddr(c.AdvertiseAddress)
		if err != nil || a.Zone() != "" || a.IsUnspecified() || a.Is4In6() {
			add("AdvertiseAddress", fmt.Errorf("%q is not a usable IP address", c.AdvertiseAddress))
		}
	}
	if len(errs) > 0 {
		return errs[0] // one sentence, naming its option (a Changes field)
	}
	return nil
}

// checkURL accepts an etcd URL: http or https, a host and a port.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.Port() == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q is not a URL like https://10.0.0.5:2379", s)
	}
	return nil
}

// urlHost is the host of an etcd URL ("" when it does not parse).
func urlHost(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// sameURL compares two URLs by scheme, host (IPs compared as addresses) and port.
func sameURL(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimSpace(a))
	ub, err2 := url.Parse(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return a == b
	}
	return ua.Scheme == ub.Scheme && sameHost(ua.Hostname(), ub.Hostname()) && ua.Port() == ub.Port()
}

func sameHost(a, b string) bool {
	ia, err1 := netip.ParseAddr(a)
	ib, err2 := netip.ParseAddr(b)
	if err1 == nil && err2 == nil {
		return ia.Unmap() == ib.Unmap()
	}
	return strings.EqualFold(a, b)
}

func isWildcardHost(h string) bool {
	a, err := netip.ParseAddr(h)
	return h == "" || err == nil && a.IsUnspecified()
}

// clusterEntry is one "name=peerURL" of --initial-cluster.
type clusterEntry struct{ name, url string }

func parseInitialCluster(s string) ([]clusterEntry, error) {
	var out []clusterEntry
	for _, part := range strings.Split(s, ",") {
		name, u, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=peerURL[,name=peerURL...]", s)
		}
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("%q: member %s: %w", s, name, err)
		}
		out = append(out, clusterEntry{name, u})
	}
	return out, nil
}

// InitialClusterMembers is --initial-cluster ("name=peerURL,...") as the
// members Generate lays out, in its order: local (this node's member, with
// its client URL) in its own place, which the list must name with the same
// peer URL. Used to generate one member of a multi-member cluster.
func InitialClusterMembers(s string, local EtcdMember) ([]EtcdMember, error) {
	entries, err := parseInitialCluster(s)
	if err != nil {
		return nil, err
	}
	var out []EtcdMember
	found := false
	for _, e := range entries {
		if e.name == local.Name {
			if e.url != local.PeerURL {
				return nil, fmt.Errorf("%q lists member %s at %s, not at its peer URL %s", s, e.name, e.url, local.PeerURL)
			}
			out, found = append(out, local), true
			continue
		}
		out = append(out, EtcdMember{Name: e.name, PeerURL: e.url})
	}
	if !found {
		return nil, fmt.Errorf("%q does not list this node's member %s; etcd would not start", s, local.Name)
	}
	return out, nil
}

func clusterNames(entries []clusterEntry) []string {
	var names []string
	for _, e := range entries {
		if !slices.Contains(names, e.name) {
			names = append(names, e.name)
		}
	}
	return names
}

// Action says what Update did to one field.
type Action string

// Actions.
const (
	// ActionSet replaced a value.
	ActionSet Action = "set"
	// ActionAdd added a flag or annotation that was absent.
	ActionAdd Action = "add"
	// ActionKeep left a field as it was on purpose; Note says why.
	ActionKeep Action = "keep"
)

// Change is one field Update changed, or deliberately kept, for the report.
type Change struct {
	// Component is the manifest's component (kube-apiserver, ...).
	Component string `json:"component"`
	// File is the manifest's path (its file name when generated).
	File string `json:"file"`
	// Field is the flag ("--cluster-cidr"), "annotation <key>",
	// "volume <name> hostPath.path", "volumeMount <name> mountPath" or
	// "<probe> httpGet.host".
	Field  string `json:"field"`
	Action Action `json:"action"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
	Note   string `json:"note,omitempty"`
}

func (c Change) String() string {
	var s string
	switch c.Action {
	case ActionAdd:
		s = fmt.Sprintf("%s: added %s %s", c.Component, c.Field, c.New)
	case ActionKeep:
		s = fmt.Sprintf("%s: kept %s", c.Component, c.Field)
		if c.Old != "" {
			s += " " + c.Old
		}
	default:
		s = fmt.Sprintf("%s: %s %s -> %s", c.Component, c.Field, c.Old, c.New)
	}
	if c.Note != "" {
		s += " (" + c.Note + ")"
	}
	return s
}

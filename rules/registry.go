package rules

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/snapshift/snapshift/transform"
)

// Options select and configure the rules. The zero value selects none.
type Options struct {
	// ServiceCIDR is the new service CIDR ("172.24.0.0/16", or two
	// comma-separated for dual stack). Empty: service-cidr is off.
	ServiceCIDR string
	// OldServiceCIDR overrides detection of the old one from the snapshot.
	OldServiceCIDR string
	// Repack allows a smaller new service range: Services whose offset does
	// not fit get the lowest free addresses, in key order.
	Repack bool
	// KeepServiceIPs lists Services ("namespace/name") that keep their old
	// address (with their IPAddress objects).
	KeepServiceIPs []string
	// DNSBridge creates "<name>-bridge" beside the kept DNS Service (in its
	// namespace: kube-system/kube-dns-bridge by default) at the address the
	// DNS Service would have been mapped to.
	DNSBridge bool
	// DNSService names the cluster DNS Service. Default kube-system/kube-dns.
	DNSService string

	// PodNetworkCIDR is the new cluster (pod) CIDR. Empty: pod-cidr is off.
	PodNetworkCIDR string
	// OldPodNetworkCIDR overrides detection of the old one.
	OldPodNetworkCIDR string

	// SATokens handles legacy ServiceAccount token Secrets when sa.key is
	// regenerated: "clear" (empty data.token; re-signed by the token
	// controller), "delete", or "" (off).
	SATokens string

	// ClusterCA is the PEM of a new cluster CA: the cluster-info rule puts it
	// into kube-public/cluster-info. Empty: cluster-info is off.
	ClusterCA []byte
	// ClusterInfoServer, when set, also replaces cluster-info's server URL.
	ClusterInfoServer string
	// BootstrapToken, with ClusterCA, is written as a bootstrap token Secret.
	BootstrapToken *BootstrapToken

	// Now stamps objects the rules create. Default time.Now.
	Now func() time.Time
}

// Rule names, in the order they run.
const (
	NameServiceCIDR   = "service-cidr"
	NamePodCIDR       = "pod-cidr"
	NameClusterConfig = "cluster-config"
	NameSATokens      = "sa-tokens"
	NameClusterInfo   = "cluster-info"
)

// Names lists every rule snapshift has.
func Names() []string {
	return []string{NameServiceCIDR, NamePodCIDR, NameClusterConfig, NameSATokens, NameClusterInfo}
}

// Build returns the rules Options select, in their fixed order. The
// cluster-config rule runs whenever a network rule does.
func Build(o Options) ([]transform.Rule, *Plan, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DNSService == "" {
		o.DNSService = "kube-system/kube-dns"
	}
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	plan := &Plan{}
	var out []transform.Rule
	if o.ServiceCIDR != "" {
		out = append(out, &ServiceCIDR{opts: o, plan: plan})
	}
	if o.PodNetworkCIDR != "" {
		out = append(out, &PodCIDR{opts: o, plan: plan})
	}
	if len(out) > 0 {
		out = append(out, &ClusterConfig{plan: plan})
	}
	if o.SATokens != "" {
		out = append(out, &SATokens{mode: o.SATokens})
	}
	if len(o.ClusterCA) > 0 {
		out = append(out, &ClusterInfo{ca: o.ClusterCA, server: o.ClusterInfoServer, token: o.BootstrapToken, now: o.Now})
	}
	return out, plan, nil
}

// validate checks the flags themselves (the snapshot is checked in Prepare).
func (o Options) validate() error {
	if o.ServiceCIDR == "" {
		switch {
		case o.OldServiceCIDR != "":
			return fmt.Errorf("--old-service-cidr needs --service-cidr")
		case len(o.KeepServiceIPs) > 0:
			return fmt.Errorf("--keep-service-ip needs --service-cidr")
		case o.DNSBridge:
			return fmt.Errorf("--dns-bridge needs --service-cidr")
		case o.Repack:
			return fmt.Errorf("--repack needs --service-cidr")
		}
	}
	switch o.SATokens {
	case "", SATokensClear, SATokensDelete:
	default:
		return fmt.Errorf("--sa-tokens %q: want %s or %s", o.SATokens, SATokensClear, SATokensDelete)
	}
	if o.BootstrapToken != nil && len(o.ClusterCA) == 0 {
		return fmt.Errorf("a bootstrap token is written with a new cluster CA (cluster-info)")
	}
	if t := o.BootstrapToken; t != nil && (!bootstrapID.MatchString(t.ID) || !bootstrapSecret.MatchString(t.Secret)) {
		return fmt.Errorf("bootstrap token: want [a-z0-9]{6}.[a-z0-9]{16}")
	}
	if o.PodNetworkCIDR == "" && o.OldPodNetworkCIDR != "" {
		return fmt.Errorf("--old-pod-network-cidr needs --pod-network-cidr")
	}
	for _, k := range o.KeepServiceIPs {
		if ns, name, ok := strings.Cut(k, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("--keep-service-ip %q: want NAMESPACE/NAME", k)
		}
	}
	if o.DNSBridge && !contains(o.KeepServiceIPs, o.DNSService) {
		return fmt.Errorf("--dns-bridge bridges a kept DNS Service: add --keep-service-ip %s", o.DNSService)
	}
	var svc, pod []string
	var err error
	if o.ServiceCIDR != "" {
		if svc, err = parseCIDRList("--service-cidr", o.ServiceCIDR); err != nil {
			return err
		}
	}
	if o.PodNetworkCIDR != "" {
		if pod, err = parseCIDRList("--pod-network-cidr", o.PodNetworkCIDR); err != nil {
			return err
		}
	}
	for _, s := range svc {
		for _, p := range pod {
			if overlaps(s, p) {
				return fmt.Errorf("the new service CIDR %s overlaps the new pod CIDR %s: they must be disjoint", s, p)
			}
		}
	}
	return nil
}

// Lookup returns a rule name's canonical form or an error listing the
// valid ones.
func Lookup(name string) (string, error) {
	for _, n := range Names() {
		if n == name {
			return n, nil
		}
	}
	names := Names()
	sort.Strings(names)
	return "", fmt.Errorf("unknown rule %q (rules: %s)", name, strings.Join(names, ", "))
}

var (
	bootstrapID     = regexp.MustCompile(`^[a-z0-9]{6}$`)
	bootstrapSecret = regexp.MustCompile(`^[a-z0-9]{16}$`)
)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

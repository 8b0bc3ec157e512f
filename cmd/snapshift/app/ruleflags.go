package app

import (
	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/transform"
)

// ruleFlags are the flags that choose and configure rules (plan, transform).
func ruleFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "service-cidr", Category: "Service CIDR", Usage: "new service CIDR, e.g. 172.24.0.0/16 (two, comma-separated, for dual stack)"},
		&cli.StringFlag{Name: "old-service-cidr", Category: "Service CIDR", Usage: "the old service CIDR (default: detected from kubeadm-config, the ServiceCIDR object and the RangeAllocation)"},
		&cli.BoolFlag{Name: "repack", Category: "Service CIDR", Usage: "allow a smaller new range: Services whose offset does not fit get the lowest free addresses"},
		&cli.StringSliceFlag{Name: "keep-service-ip", Category: "Service CIDR", Usage: "NAMESPACE/NAME of a Service that keeps its old address (repeatable), e.g. kube-system/kube-dns"},
		&cli.BoolFlag{Name: "dns-bridge", Category: "Service CIDR", Usage: "with --keep-service-ip for the DNS Service: create kube-system/kube-dns-bridge at its mapped address and point clusterDNS there"},
		&cli.StringFlag{Name: "dns-service", Category: "Service CIDR", Value: "kube-system/kube-dns", Usage: "the cluster DNS Service"},
		&cli.StringFlag{Name: "pod-network-cidr", Category: "Pod CIDR", Usage: "new cluster (pod) CIDR, e.g. 10.55.0.0/16"},
		&cli.StringFlag{Name: "old-pod-network-cidr", Category: "Pod CIDR", Usage: "the old pod CIDR (default: detected from kubeadm-config, kube-proxy and flannel)"},
		&cli.StringFlag{Name: "sa-tokens", Category: "ServiceAccount tokens", Usage: "when sa.key is regenerated: clear (empty each legacy token Secret's data.token so kube-controller-manager re-signs it; works on 1.24+) or delete"},
	}
}

// selectedRules builds the rules the flags choose, the plan they share, and
// the leftover scan over the old ranges.
func selectedRules(c *cli.Context) ([]transform.Rule, *rules.Plan, *rules.LeftoverScan, error) {
	rs, plan, err := rules.Build(rules.Options{
		ServiceCIDR: c.String("service-cidr"), OldServiceCIDR: c.String("old-service-cidr"), Repack: c.Bool("repack"),
		KeepServiceIPs: c.StringSlice("keep-service-ip"), DNSBridge: c.Bool("dns-bridge"), DNSService: c.String("dns-service"),
		PodNetworkCIDR: c.String("pod-network-cidr"), OldPodNetworkCIDR: c.String("old-pod-network-cidr"),
		SATokens: c.String("sa-tokens"),
	})
	if err != nil {
		return nil, nil, nil, usagef("%v", err)
	}
	return rs, plan, rules.NewLeftoverScan(plan), nil
}

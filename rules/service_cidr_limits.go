package rules

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/transform"
)

// maxServiceHostBits is kube-apiserver's limit on a service range while its
// bitmap allocator is in use: at most 2^20 addresses, so an IPv4 range of
// at least /12 and an IPv6 range of at least /108
// (cmd/kube-apiserver/app/options/validation.go, validateClusterIPFlags).
// The limit is lifted only when MultiCIDRServiceAllocator and
// DisableAllocatorDualWrite are both on: by default from 1.34
// (DisableAllocatorDualWrite GA, on), never by default before.
const maxServiceHostBits = 20

// serviceRangeLimit refuses a new service range the snapshot's kube-apiserver
// would refuse at start. version is kubeadm's kubernetesVersion ("v1.33.2");
// unknown, it returns a note instead of refusing.
func serviceRangeLimit(version string, newP []netip.Prefix) (note string, err error) {
	var wide []string
	for _, p := range newP {
		if p.Addr().BitLen()-p.Bits() > maxServiceHostBits {
			wide = append(wide, fmt.Sprintf("%s (kube-apiserver wants at least /%d for IPv%d)", p, p.Addr().BitLen()-maxServiceHostBits, ipVersion(p)))
		}
	}
	if len(wide) == 0 {
		return "", nil
	}
	minor, ok := kubeMinor(version)
	switch {
	case !ok:
		return fmt.Sprintf("the snapshot records no Kubernetes version: kube-apiserver before 1.34 refuses to start with %s unless MultiCIDRServiceAllocator and DisableAllocatorDualWrite are on",
			strings.Join(wide, ", ")), nil
	case minor >= 34:
		return "", nil
	}
	return "", fmt.Errorf("%w: %w", transform.ErrRefused, option.Errorf("ServiceCIDR",
		"the new service range %s ({}) is wider than kube-apiserver %s accepts with its default feature gates (a range may hold at most 2^%d addresses before 1.34)",
		strings.Join(wide, ", "), version, maxServiceHostBits))
}

func ipVersion(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 4
	}
	return 6
}

// kubeMinor reads the minor version of "v1.33.2" (or "1.33").
func kubeMinor(v string) (int, bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || parts[0] != "1" {
		return 0, false
	}
	m, err := strconv.Atoi(parts[1])
	return m, err == nil
}

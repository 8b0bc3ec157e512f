package cidr

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// SplitHostPort parses an endpoint as kubeadm's ParseHostPort does: "host",
// "host:port" or "[ipv6]:port"; port is "" when absent, else a number in
// 1-65535; host is not empty and holds no "/" or space. Whether host must
// be an address or a DNS name is the caller's to check. The one parser of
// endpoints (the control-plane endpoint in pki and in the rules).
func SplitHostPort(ep string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(ep)
	if err != nil {
		host, port = ep, ""
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("%q: port %q is not a number in 1-65535", ep, port)
		}
	}
	if scheme, rest, ok := strings.Cut(ep, "://"); ok {
		return "", "", fmt.Errorf("%q is not host[:port]: drop the %s:// (give %s)", ep, scheme, strings.TrimSuffix(rest, "/"))
	}
	if host == "" || strings.ContainsAny(host, "/ ") {
		return "", "", fmt.Errorf("%q is not host[:port] (e.g. 10.0.0.10:6443 or k8s-api.internal:6443)", ep)
	}
	return host, port, nil
}

// Package k3sfixtures holds fixtures read from k3s's own sources, for the k3s and RKE2 corpora and tests.
package k3sfixtures

import (
	_ "embed"
	"strings"
)

// CoreDNSServiceTemplate is the kube-dns Service of k3s's packaged CoreDNS manifest (see the
// file's header for its source).
//
//go:embed coredns-service.yaml.tmpl
var CoreDNSServiceTemplate string

// RenderCoreDNSService renders CoreDNSServiceTemplate as k3s's deploy controller does
// (pkg/server/server.go templateVars; pkg/deploy replaces each %{VAR}% literally) for one or two
// cluster DNS addresses.
func RenderCoreDNSService(clusterDNS ...string) string {
	policy := "SingleStack"
	if len(clusterDNS) > 1 {
		policy = "RequireDualStack"
	}
	r := strings.NewReplacer(
		"%{CLUSTER_DNS}%", clusterDNS[0],
		"%{CLUSTER_DNS_LIST}%", "["+strings.Join(clusterDNS, ",")+"]",
		"%{CLUSTER_DNS_IPFAMILYPOLICY}%", policy)
	return r.Replace(CoreDNSServiceTemplate)
}

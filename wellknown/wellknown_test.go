package wellknown

import "testing"

// TestPrefixAndResource: one table serves both directions.
func TestPrefixAndResource(t *testing.T) {
	for res, want := range map[string]string{
		"services": "services", "endpoints": "endpoints", "nodes": "nodes", "replicationcontrollers": "replicationcontrollers",
		"ingresses": "ingress", "configmaps": "configmaps", "ciliumnodes.cilium.io": "cilium.io/ciliumnodes",
	} {
		if got := Resource(Prefix(res) + "ns/name"); got != want {
			t.Errorf("Resource(Prefix(%s)+ns/name) = %s, want %s", res, got, want)
		}
	}
	if got := Resource("/registry/ranges/serviceips"); got != "ranges/serviceips" {
		t.Errorf("Resource(ranges/serviceips) = %s", got)
	}
	if got := Resource("/other/x"); got != "(outside /registry)" {
		t.Errorf("Resource(/other/x) = %s", got)
	}
}

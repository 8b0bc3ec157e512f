package gen

import (
	"fmt"
	"strings"
)

// ProfileServices is a cluster shaped like the one issue 28 measured: many
// Services, each with its IPAddress (about 9% of the keys each), large Pods
// (a few KiB of annotations each), and one history revision per object:
// every object but the IPAddresses was updated exactly once since the last
// compaction, and nothing was deleted.
const ProfileServices = "services"

// The services profile's bulk mix, in ten-thousandths (a Service brings its
// IPAddress too).
var servicesMix = []struct {
	upTo int
	kind kind
}{
	{1050, kPod}, {1950, kService}, {4500, kEvent}, {5900, kConfigMap}, {7000, kSecret}, {7800, kLease},
	{8600, kCustom}, {10000, kServiceAccount},
}

func servicesKind(h int) kind {
	for _, m := range servicesMix {
		if h < m.upTo {
			return m.kind
		}
	}
	return kServiceAccount
}

// scheduleOnce queues the one update of a created object in the services
// profile (an IPAddress is never updated).
func (s *sequencer) scheduleOnce(j job, r *rng) {
	if j.kind == kIPAddress {
		return
	}
	window := max(64, min(4096, int64(s.cfg.Keys)/50))
	u := j
	u.variant, u.version = 1, 2
	s.push(s.step+1+int64(r.intn(int(window))), u)
}

// largePodAnnotations are the few KiB a large Pod carries: a rendered
// configuration checksum list and a last-applied-like blob, as Helm charts
// and service meshes leave them.
func largePodAnnotations(r *rng, variant int32) map[string]string {
	var b strings.Builder
	b.WriteString(`{"sidecars":[`)
	for i := range 12 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"proxy-%d","image":"registry.example.com/mesh/proxy:1.%d.%d","digest":"sha256:%s"}`, i, variant, i, r.hex(64))
	}
	b.WriteString(`]}`)
	return map[string]string{
		"mesh.example.com/sidecar-status": b.String(),
		"checksum/config":                 r.hex(64),
		"checksum/secrets":                r.hex(64),
		"mesh.example.com/trust-bundle":   r.base64ish(1024),
	}
}

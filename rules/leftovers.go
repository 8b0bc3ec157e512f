package rules

import (
	"net/netip"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/clusterinfo"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/inspect"
)

// LeftoverScan finds addresses of the old ranges that remain in the output
// after the rules: pod status IPs, endpoints, annotations, env values, other
// ConfigMaps, custom resources. It reads the stored bytes (protobuf keeps
// strings as plain bytes, so a textual scan finds them without decoding)
// and groups what it finds by resource. It is a report, not a rule: an
// operator rehearsing on a copy sees what the rules did not cover.
type LeftoverScan struct {
	plan *Plan
	// MaxExamples bounds the keys listed per resource. Default 10.
	MaxExamples int

	groups    map[string]*LeftoverGroup
	encrypted int
}

// LeftoverGroup is one resource's leftovers.
type LeftoverGroup struct {
	Resource string     `json:"resource"`
	Keys     int        `json:"keys"`
	Examples []Leftover `json:"examples"`
	// Intended marks exempt Services, which keep old addresses on purpose.
	Intended bool `json:"intended,omitempty"`
}

// Leftover is one key and the old-range addresses in it.
type Leftover struct {
	Key       string   `json:"key"`
	Addresses []string `json:"addresses,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// LeftoverReport is the scan's result.
type LeftoverReport struct {
	Ranges    []string         `json:"ranges"`
	Groups    []*LeftoverGroup `json:"groups"`
	Encrypted int              `json:"encryptedNotScanned,omitempty"`
}

// NewLeftoverScan scans for the old ranges of plan (filled in by Prepare).
func NewLeftoverScan(plan *Plan) *LeftoverScan {
	return &LeftoverScan{plan: plan, MaxExamples: 10, groups: map[string]*LeftoverGroup{}}
}

func (s *LeftoverScan) ranges() []netip.Prefix {
	var out []netip.Prefix
	if s.plan.Service != nil {
		for i, o := range s.plan.Service.Old {
			if o != s.plan.Service.New[i] {
				out = append(out, o)
			}
		}
	}
	if s.plan.Pod != nil {
		for i, o := range s.plan.Pod.Old {
			if o != s.plan.Pod.New[i] {
				out = append(out, o)
			}
		}
	}
	return out
}

// Observe implements transform.Observer.
func (s *LeftoverScan) Observe(key string, value []byte, _ bool) {
	if codec.Detect(value) == codec.Encrypted {
		s.encrypted++
		return
	}
	ranges := s.ranges()
	if len(ranges) == 0 {
		return
	}
	var found []string
	seen := map[netip.Addr]bool{}
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c < '0' || c > '9' || (i > 0 && (isDigit(value[i-1]) || value[i-1] == '.')) {
			continue
		}
		j := i
		for j < len(value) && j-i < 15 && (isDigit(value[j]) || value[j] == '.') {
			j++
		}
		if j-i < 7 {
			continue
		}
		a, err := netip.ParseAddr(strings.TrimRight(string(value[i:j]), "."))
		if err != nil || seen[a] {
			i = j
			continue
		}
		text := a.String()
		if j < len(value) && value[j] == '/' { // a CIDR: show it whole
			k := j + 1
			for k < len(value) && k-j <= 2 && isDigit(value[k]) {
				k++
			}
			if p, err := netip.ParsePrefix(string(value[i:k])); err == nil {
				text, j = p.String(), k
			}
		}
		for _, r := range ranges {
			if r.Contains(a) {
				seen[a] = true
				found = append(found, text)
				break
			}
		}
		i = j
	}
	if len(found) == 0 {
		return
	}
	res := inspect.Resource(key)
	intended := s.intended(key)
	gk := res
	if intended {
		gk = res + " (kept on purpose)"
	}
	g := s.groups[gk]
	if g == nil {
		g = &LeftoverGroup{Resource: gk, Intended: intended}
		s.groups[gk] = g
	}
	g.Keys++
	if len(g.Examples) < s.MaxExamples {
		l := Leftover{Key: key, Addresses: found}
		if strings.HasPrefix(key, "/registry/secrets/") {
			l = Leftover{Key: key, Note: "old-range addresses inside Secret data (not shown)"}
		}
		g.Examples = append(g.Examples, l)
	}
}

func (s *LeftoverScan) intended(key string) bool {
	if s.plan.Service == nil {
		return false
	}
	for _, mv := range s.plan.Service.Services {
		if !mv.Kept {
			continue
		}
		if mv.Key == key {
			return true
		}
		for _, ip := range mv.Old { // the kept Service's own IPAddress objects
			if key == clusterinfo.PrefixIPAddresses+ip {
				return true
			}
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Report returns the groups, largest first.
func (s *LeftoverScan) Report() *LeftoverReport {
	r := &LeftoverReport{Encrypted: s.encrypted, Groups: []*LeftoverGroup{}}
	for _, p := range s.ranges() {
		r.Ranges = append(r.Ranges, p.String())
	}
	for _, g := range s.groups {
		r.Groups = append(r.Groups, g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		if r.Groups[i].Keys != r.Groups[j].Keys {
			return r.Groups[i].Keys > r.Groups[j].Keys
		}
		return r.Groups[i].Resource < r.Groups[j].Resource
	})
	return r
}

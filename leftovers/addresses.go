package leftovers

import (
	"bytes"
	"net/netip"
	"sort"
	"sync"

	"github.com/snapshift/snapshift/wellknown"
)

// AddressLeftover is one resource whose output values still hold a moved
// control-plane node's old address.
type AddressLeftover struct {
	Resource string `json:"resource"`
	Keys     int    `json:"keys"`
	Example  string `json:"example"`
}

// AddressScan is a transform.Observer that counts, per resource, the
// output values still holding an old control-plane address as text (the
// rules move the copies they know; a Node's own InternalIP, Pods' host IP,
// or an add-on's configuration are reported here). Encrypted values are
// not read.
type AddressScan struct {
	olds [][]byte
	mu   sync.Mutex
	by   map[string]*AddressLeftover
}

func NewAddressScan(moved map[netip.Addr]netip.Addr) *AddressScan {
	s := &AddressScan{by: map[string]*AddressLeftover{}}
	for old := range moved {
		s.olds = append(s.olds, []byte(old.String()))
	}
	return s
}

// Observe implements transform.Observer.
func (s *AddressScan) Observe(key, value []byte, _ bool) {
	if bytes.HasPrefix(value, []byte("k8s:enc:")) || !s.holds(value) {
		return
	}
	res := wellknown.Resource(string(key))
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.by[res]
	if !ok {
		l = &AddressLeftover{Resource: res, Example: string(key)}
		s.by[res] = l
	}
	l.Keys++
}

// holds reports whether value holds an old address as a whole token (not
// 10.0.0.1 inside 10.0.0.10).
func (s *AddressScan) holds(value []byte) bool {
	for _, old := range s.olds {
		for i := 0; ; {
			j := bytes.Index(value[i:], old)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(old)
			if (start == 0 || !addrByte(value[start-1])) && (end == len(value) || !addrByte(value[end])) {
				return true
			}
			i = start + 1
		}
	}
	return false
}

// addrByte is a byte that would continue an IPv4 address (a port's ':'
// does not).
func addrByte(b byte) bool { return b == '.' || (b >= '0' && b <= '9') }

// Report lists the resources, sorted.
func (s *AddressScan) Report() []AddressLeftover {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AddressLeftover, 0, len(s.by))
	for _, l := range s.by {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

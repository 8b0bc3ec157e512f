package cidr

import "net/netip"

// Map returns the address at a's offset in the new range. It fails with
// ErrDoesNotFit when the offset is beyond the new range. Only the tests map
// single addresses through a Mapper (the rules use Offset and AddrAt); they
// check the offset arithmetic with it.
func (m *Mapper) Map(a netip.Addr) (netip.Addr, error) {
	off, err := Offset(m.Old, a)
	if err != nil {
		return netip.Addr{}, err
	}
	return AddrAt(m.New, off)
}

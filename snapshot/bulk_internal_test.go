package snapshot

import "testing"

// TestBranchGroups holds the cut of a level of branch pages: every child
// on exactly one page, in order, each page within a page's size, and no
// page with fewer than two children, also when the last page would get
// only one.
func TestBranchGroups(t *testing.T) {
	b := &bulkLoader{pageSize: 4 << 10}
	perPage := (b.pageSize - pageHeaderSize) / (elementSize + 17)
	for _, n := range []int{2, 3, perPage - 1, perPage, perPage + 1, perPage + 2, 2*perPage + 1, 5000} {
		var refs pageRefs
		for i := range n {
			refs.add(RevisionKey(Revision{Main: int64(i + 1)}), uint64(i+4))
		}
		groups := b.branchGroups(refs)
		next := 0
		for _, g := range groups {
			size := pageHeaderSize + (g[1]-g[0])*(elementSize+17)
			if g[0] != next || g[1]-g[0] < 2 || size > b.pageSize {
				t.Errorf("%d children: page %v (after %d, %d bytes)", n, g, next, size)
			}
			next = g[1]
		}
		if next != n {
			t.Errorf("%d children: pages end at %d", n, next)
		}
	}
}

package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/wellknown"
)

// node builds a Node's pod CIDRs as kube-controller-manager writes them:
// podCIDR the first of podCIDRs.
func node(name string, cidrs ...string) nodePods {
	n := nodePods{Key: wellknown.PrefixNodes + name, Name: name, PodCIDRs: cidrs}
	if len(cidrs) > 0 {
		n.PodCIDR = cidrs[0]
	}
	return n
}

// nodeLines renders a layout's moves one line each, "node old -> new",
// checking each Node's Moves entry agrees.
func nodeLines(t *testing.T, lay *podLayout) []string {
	t.Helper()
	var out []string
	for _, mv := range lay.Nodes {
		if got := lay.Moves[wellknown.PrefixNodes+mv.Node]; !slices.Equal(got, mv.New) {
			t.Errorf("Moves[%s] = %v, want %v", mv.Node, got, mv.New)
		}
		out = append(out, mv.Node+" "+strings.Join(mv.Old, ",")+" -> "+strings.Join(mv.New, ","))
	}
	if len(lay.Moves) != len(lay.Nodes) {
		t.Errorf("%d Moves for %d moved Nodes", len(lay.Moves), len(lay.Nodes))
	}
	return out
}

func TestPlanPods(t *testing.T) {
	const refusal = "refused: kube-controller-manager would exit at start with these node CIDRs: "
	for _, c := range []struct {
		name  string
		wish  podWish
		moves []string
		err   string // the whole message of a refusal (always ErrRefused)
		field string // the option the refusal names, if any
	}{
		{name: "offset and mask sizes /21 /24 /28 kept",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/16"), Nodes: []nodePods{
				node("big", "10.244.8.0/21"), node("mid", "10.244.1.0/24"), node("small", "10.244.2.16/28"), node("new"),
			}},
			moves: []string{"big 10.244.8.0/21 -> 10.55.8.0/21", "mid 10.244.1.0/24 -> 10.55.1.0/24", "small 10.244.2.16/28 -> 10.55.2.16/28"}},
		{name: "a larger cluster CIDR keeps the offsets",
			wish:  podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.32.0.0/12"), Nodes: []nodePods{node("a", "10.244.3.0/24")}},
			moves: []string{"a 10.244.3.0/24 -> 10.32.3.0/24"}},
		{name: "only podCIDR set",
			wish:  podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/16"), Nodes: []nodePods{{Key: wellknown.PrefixNodes + "a", Name: "a", PodCIDR: "10.244.5.0/24"}}},
			moves: []string{"a 10.244.5.0/24 -> 10.55.5.0/24"}},
		{name: "dual stack, only IPv6 remapped",
			wish:  podWish{Old: pfxs("fd00:10:244::/56"), New: pfxs("fd00:55::/56"), Nodes: []nodePods{node("a", "10.244.1.0/24", "fd00:10:244:1::/64")}},
			moves: []string{"a 10.244.1.0/24,fd00:10:244:1::/64 -> 10.244.1.0/24,fd00:55:0:1::/64"}},
		{name: "a second run moves nothing",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/16"), Nodes: []nodePods{node("a", "10.55.1.0/24")}}},
		{name: "node CIDR outside the new cluster CIDR refused",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/20"), Nodes: []nodePods{
				node("a", "10.244.1.0/24"), node("far", "10.244.200.0/24"), node("wide", "10.244.0.0/19"),
			}},
			err: refusal + "node far: 10.244.200.0/24 at offset 51200: does not fit in the new range 10.55.0.0/20; " +
				"node wide: 10.244.0.0/19 (/19) is larger than the whole new range 10.55.0.0/20: does not fit in the new range; " +
				"choose a larger range, or pass RepackNodes to give the nodes that do not fit free blocks of their size", field: "RepackNodes"},
		{name: "repack: the misfits get the lowest free blocks of their size, largest first",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/20"), Repack: true, Nodes: []nodePods{
				node("a", "10.244.1.0/24"), node("far", "10.244.200.0/24"), node("far-small", "10.244.201.16/28"), node("far-big", "10.244.64.0/22"),
			}},
			moves: []string{"a 10.244.1.0/24 -> 10.55.1.0/24", "far 10.244.200.0/24 -> 10.55.0.0/24",
				"far-small 10.244.201.16/28 -> 10.55.2.0/28", "far-big 10.244.64.0/22 -> 10.55.4.0/22"}},
		{name: "repack: dual stack, only the family that does not fit moves to a free block",
			wish: podWish{Old: pfxs("10.244.0.0/16", "fd00:10:244::/56"), New: pfxs("10.55.0.0/20", "fd00:55::/56"), Repack: true, Nodes: []nodePods{
				node("far", "10.244.200.0/24", "fd00:10:244:c8::/64"),
			}},
			moves: []string{"far 10.244.200.0/24,fd00:10:244:c8::/64 -> 10.55.0.0/24,fd00:55:0:c8::/64"}},
		{name: "repack: no room left",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/23"), Repack: true, Nodes: []nodePods{
				node("a", "10.244.0.0/24"), node("b", "10.244.1.0/24"), node("c", "10.244.7.0/24"), node("wide", "10.244.8.0/22"),
			}},
			err: refusal + "node c: no free /24 left in the new cluster CIDR 10.55.0.0/23 for 10.244.7.0/24; node wide: no free /22 left in the new cluster CIDR 10.55.0.0/23 for 10.244.8.0/22"},
		{name: "node CIDR outside the old cluster CIDR refused",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/16"), Nodes: []nodePods{node("stray", "10.99.1.0/24"), node("bad", "banana")}},
			err:  refusal + `node bad: podCIDR "banana" is not a CIDR; node stray: 10.99.1.0/24 is outside the old cluster CIDR 10.244.0.0/16`},
		{name: "overlap refused",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/16"), Nodes: []nodePods{node("a", "10.55.1.0/24"), node("b", "10.244.1.0/24")}},
			err:  refusal + "nodes a (10.55.1.0/24) and b (10.55.1.0/24) overlap"},
		{name: "podCIDR and podCIDRs disagree",
			wish: podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/16"), Nodes: []nodePods{
				{Key: wellknown.PrefixNodes + "a", Name: "a", PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.2.0/24"}}}},
			err: refusal + "node a: podCIDR 10.244.1.0/24 differs from podCIDRs[0] 10.244.2.0/24"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lay, err := planPods(c.wish)
			if c.err != "" {
				checkRefusal(t, err, c.field, true, c.err)
				return
			}
			if err != nil {
				t.Fatalf("planPods: %v", err)
			}
			if got := nodeLines(t, lay); !slices.Equal(got, c.moves) {
				t.Errorf("moves:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.moves, "\n  "))
			}
		})
	}
}

// TestPlanPodsRefusalIsASummary (issue 52 item 7): a pod range too small
// for many nodes is refused with the count, the span of their offsets and
// the smallest range that holds them where they are, not a list of every
// node; the whole list stays in the error's details (-o json).
func TestPlanPodsRefusalIsASummary(t *testing.T) {
	var nodes []nodePods
	for i := 0; i < 50; i++ {
		nodes = append(nodes, node(fmt.Sprintf("n%02d", i), fmt.Sprintf("10.244.%d.0/24", i)))
	}
	_, err := planPods(podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/20"), Nodes: nodes})
	want := "34 node CIDRs do not fit 10.55.0.0/20 at their offsets (4096 to 12799 from the old range's start); the smallest range at that address that holds every one where it is: 10.55.0.0/18"
	if err == nil || !strings.Contains(err.Error(), want) || len(err.Error()) > 400 || strings.Contains(err.Error(), "node n49") {
		t.Fatalf("refusal (%d characters): %v\nwant a summary with %q", len(fmt.Sprint(err)), err, want)
	}
	var oe *option.Error
	if !errors.As(err, &oe) || len(oe.Details) != 34 || !strings.Contains(strings.Join(oe.Details, "\n"), "node n49: 10.244.49.0/24") {
		t.Errorf("the details do not list every node: %v", oe)
	}
	// The range it names is enough.
	if _, err := planPods(podWish{Old: pfxs("10.244.0.0/16"), New: pfxs("10.55.0.0/18"), Nodes: nodes}); err != nil {
		t.Errorf("the range the refusal names is refused too: %v", err)
	}
}

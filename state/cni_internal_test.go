package state

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/wellknown"
)

// TestEveryCNIDetected: every CNI of package cni's table has a detector
// and every detector is for a CNI of the table, so DetectCNI names exactly
// the table's CNIs (a row without a detector would make it fail, a
// detector without a row would never run).
func TestEveryCNIDetected(t *testing.T) {
	got := slices.Sorted(maps.Keys(cniDetectors))
	want := slices.Sorted(slices.Values(cni.Names()))
	if !slices.Equal(got, want) {
		t.Errorf("detectors for %v, table %v", got, want)
	}
}

// TestCNIListed: DetectCNI lists the prefixes of every IPAM and marker
// resource of the table (those it counts, or shows the CNI by) and the
// DaemonSets.
func TestCNIListed(t *testing.T) {
	want := []string{wellknown.PrefixCalicoPools, wellknown.PrefixCalicoBlocks, wellknown.PrefixCalicoAffs, wellknown.PrefixCalicoHandles,
		wellknown.PrefixTigeraInstall, wellknown.PrefixCiliumNodes, wellknown.PrefixCiliumPools, "/registry/daemonsets/"}
	if got := strings.Join(CNIListed, " "); got != strings.Join(want, " ") {
		t.Errorf("CNIListed:\n%s\nwant\n%s", got, strings.Join(want, " "))
	}
}

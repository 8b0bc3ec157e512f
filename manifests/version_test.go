package manifests

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestVersionRangeIsTested: OldestKubernetesVersion and NewestKubernetesVersion are the oldest and newest releases make e2e judges
// (hack/e2e.sh's default versions, which e2e's versions() repeats): raising one without the other
// would support a version nothing checks, or refuse one that is checked.
func TestVersionRangeIsTested(t *testing.T) {
	b, err := os.ReadFile("../hack/e2e.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^versions=\$\{SNAPSHIFT_E2E_K8S:-"([^"]+)"\}`).FindSubmatch(b)
	if m == nil {
		t.Fatal("hack/e2e.sh has no default versions= line")
	}
	var oldest, newest *version.Version
	for _, v := range strings.Fields(string(m[1])) {
		sv := version.MustParseSemantic(strings.TrimPrefix(v, "v"))
		if oldest == nil || sv.LessThan(oldest) {
			oldest = sv
		}
		if newest == nil || newest.LessThan(sv) {
			newest = sv
		}
	}
	want := version.MustParseGeneric(strings.TrimPrefix(OldestKubernetesVersion, "v"))
	if oldest.Major() != want.Major() || oldest.Minor() != want.Minor() {
		t.Errorf("OldestKubernetesVersion is %s, but make e2e's oldest is v%s", OldestKubernetesVersion, oldest)
	}
	want = version.MustParseGeneric(strings.TrimPrefix(NewestKubernetesVersion, "v"))
	if newest.Major() != want.Major() || newest.Minor() != want.Minor() {
		t.Errorf("NewestKubernetesVersion is %s, but make e2e's newest is v%s", NewestKubernetesVersion, newest)
	}
	for v, want := range map[string]bool{"v1.36.3": false, "v1.36.9-rc.0": false, "v1.30.14": false, "v1.37.0-alpha.1": true, "v1.40.0": true, "v2.0.0": true} {
		if got := NewerThanTested(v); got != want {
			t.Errorf("NewerThanTested(%s) = %v, want %v", v, got, want)
		}
	}
}

func TestCheckKubernetesVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.36.3": "", "v1.30.0": "", "v1.30.14": "", "v1.37.0-alpha.1": "",
		"v1.29.9":      `"v1.29.9" is older than v1.30, the oldest Kubernetes snapshift supports`,
		"v1.30.0-rc.1": "", // a pre-release of the oldest minor is that minor
		"v1.24.17":     "older than v1.30",
		"1.36.3":       `"1.36.3" is not a version like v1.36.3`,
		"v1.36":        "is not a version like v1.36.3",
		"latest":       "is not a version like v1.36.3",
	} {
		err := CheckKubernetesVersion(v)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", v, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", v, err, want)
		}
	}
}

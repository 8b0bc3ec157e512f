package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: Module, Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "go.etcd.io/bbolt", Version: "v1.5.0"},
			{Path: "k8s.io/apimachinery", Version: "v0.37.0", Replace: &debug.Module{Path: "k8s.io/apimachinery", Version: "v0.37.1"}},
			{Path: "golang.org/x/sys", Version: "v0.1.0"},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-11-25T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
			{Key: "GOOS", Value: "linux"},
			{Key: "GOARCH", Value: "amd64"},
		},
	}
	got := fromBuildInfo(bi, "", "", "")
	if got.Version != "devel" || got.Commit != "0123456789abcdef0123" || !got.Modified || got.Platform != "linux/amd64" {
		t.Fatalf("from a checkout build: %+v", got)
	}
	if got.Dependencies["go.etcd.io/bbolt"] != "v1.5.0" || got.Dependencies["k8s.io/apimachinery"] != "v0.37.1" {
		t.Errorf("dependencies: %v", got.Dependencies)
	}
	if _, ok := got.Dependencies["golang.org/x/sys"]; ok {
		t.Errorf("an unlisted module is reported: %v", got.Dependencies)
	}
	if s := got.String(); s != "snapshift devel (commit 0123456789ab-dirty, 2026-11-25T10:00:00Z, go1.26.8)" {
		t.Errorf("String() = %q", s)
	}
	// A go install build: the module version; ldflags win over both.
	bi.Main.Version = "v0.5.0"
	if got := fromBuildInfo(bi, "", "", ""); got.Version != "v0.5.0" {
		t.Errorf("go install build: version %q", got.Version)
	}
	if got := fromBuildInfo(bi, "v0.6.0", "feed", "2026-01-01T00:00:00Z"); got.Version != "v0.6.0" || got.Commit != "feed" || got.Date != "2026-01-01T00:00:00Z" {
		t.Errorf("ldflags: %+v", got)
	}
	if got := fromBuildInfo(nil, "", "", ""); got.Version != "devel" {
		t.Errorf("no build info: %+v", got)
	}
}

// The test binary records the toolchain (but, being a test binary, no
// dependencies: the built binary's are checked by the CLI's version test).
func TestGet(t *testing.T) {
	got := Get()
	if !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("GoVersion %q", got.GoVersion)
	}
}

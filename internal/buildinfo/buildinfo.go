// Package buildinfo says which snapshift this is: its version, the commit it
// was built from, when, with which Go, and the versions of the libraries that
// decide what it reads and writes (etcd, bbolt, the Kubernetes libraries).
//
// Version, Commit and Date are set by the release build with
//
//	-ldflags "-X github.com/snapshift/snapshift/internal/buildinfo.version=v0.5.0 ..."
//
// and otherwise come from what the Go toolchain records in the binary
// (debug.ReadBuildInfo): the module version of a `go install ...@v0.5.0`
// build, and the VCS revision, time and dirty flag of a build in a checkout.
package buildinfo

import (
	"runtime/debug"
	"sort"
	"strings"
)

// Set with -ldflags -X by `make release`; empty in other builds.
var (
	version string
	commit  string
	date    string
)

// Module is the path of snapshift's Go module.
const Module = "github.com/snapshift/snapshift"

// Info is the identity block printed by `snapshift version` and written into
// report.json, the runbook header and verify's JSON report.
type Info struct {
	// Version is the release version ("v0.5.0"), the module version of a
	// `go install` build, or "devel".
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from ("" when unknown).
	Commit string `json:"commit,omitempty"`
	// Date is the commit time (or the release build's date), RFC 3339.
	Date string `json:"date,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform,omitempty"`
	// Dependencies are the versions of the libraries that decide what
	// snapshift reads and writes, by module path.
	Dependencies map[string]string `json:"dependencies,omitempty"`
}

// keyDeps are the modules whose versions Info reports.
var keyDeps = []string{
	"go.etcd.io/etcd/server/v3",
	"go.etcd.io/etcd/etcdutl/v3",
	"go.etcd.io/etcd/api/v3",
	"go.etcd.io/bbolt",
	"k8s.io/api",
	"k8s.io/apimachinery",
	"k8s.io/client-go",
	"k8s.io/kubectl",
}

// Get returns this binary's identity.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version, commit, date)
}

func fromBuildInfo(bi *debug.BuildInfo, ldVersion, ldCommit, ldDate string) Info {
	info := Info{Version: "devel"}
	if bi == nil {
		info.Version, info.Commit, info.Date = nonEmpty(ldVersion, info.Version), ldCommit, ldDate
		return info
	}
	info.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.Date = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" {
		info.Platform = goos + "/" + goarch
	}
	info.Version = nonEmpty(ldVersion, info.Version)
	info.Commit = nonEmpty(ldCommit, info.Commit)
	info.Date = nonEmpty(ldDate, info.Date)
	want := map[string]bool{}
	for _, m := range keyDeps {
		want[m] = true
	}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		if want[d.Path] {
			if info.Dependencies == nil {
				info.Dependencies = map[string]string{}
			}
			info.Dependencies[d.Path] = m.Version
		}
	}
	return info
}

func nonEmpty(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

// String is the one-line form used in runbook headers and logs:
// "snapshift v0.5.0 (commit 1a2b3c4d5e6f, 2026-11-25T10:00:00Z, go1.26.8)".
func (i Info) String() string {
	var extra []string
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-dirty"
		}
		extra = append(extra, "commit "+c)
	}
	if i.Date != "" {
		extra = append(extra, i.Date)
	}
	if i.GoVersion != "" {
		extra = append(extra, i.GoVersion)
	}
	s := "snapshift " + i.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// DependencyLines lists the dependencies as "path version", sorted.
func (i Info) DependencyLines() []string {
	var out []string
	for p, v := range i.Dependencies {
		out = append(out, p+" "+v)
	}
	sort.Strings(out)
	return out
}

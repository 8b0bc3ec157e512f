package app

import (
	"github.com/snapshift/snapshift/inspect"
	"github.com/snapshift/snapshift/internal/buildinfo"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/pki"
	"github.com/snapshift/snapshift/snapshot"
)

// The -o json|yaml documents of the commands that print a library's
// report: each opens with apiVersion and kind (typeMeta), then the report's
// own fields, unchanged. docs/OUTPUT.md is generated from these types
// (TestOutputSchemas); a list is a List kind with its items under items.

// inspectDocument is inspect's document.
type inspectDocument struct {
	typeMeta
	*inspect.Report
}

// transformDocument is the document of plan, transform and restore with
// rules: the transform's report, the rules' plan and the leftover scan.
type transformDocument struct {
	typeMeta
	*migrate.Result
}

// entryDocument is get's document when it prints the etcd entry rather
// than the object alone (--show-entry, or a value that is no object).
type entryDocument struct {
	typeMeta
	*inspect.GetResult
}

// entryList is ls's document: the live keys under the prefix.
type entryList struct {
	typeMeta
	// Items are the keys, in key order.
	Items []inspect.ListEntry `json:"items"`
}

// certsResultList is certs' document: one result per directory written.
type certsResultList struct {
	typeMeta
	// Items are the directories written, in order.
	Items []pki.Result `json:"items"`
}

// ruleList is rules' document: every registered rule.
type ruleList struct {
	typeMeta
	// Items are the rules, in the order they run.
	Items []ruleInfo `json:"items"`
}

// manifestsDocument is manifests' document.
type manifestsDocument struct {
	typeMeta
	// Changes are the flags changed, manifest by manifest.
	Changes []manifests.Change `json:"changes"`
	// Written is the directory written and its files.
	Written *manifests.WriteResult `json:"written"`
}

// restoreDocument is restore's document (without rules; with them it is a
// TransformReport).
type restoreDocument struct {
	typeMeta
	// Name is the restored member's name.
	Name string `json:"name"`
	// DataDir is the member's new data directory.
	DataDir string `json:"dataDir"`
	// WALDir is its separate WAL directory ("" when under the data dir).
	WALDir string `json:"walDir"`
	// InitialCluster is etcd's --initial-cluster of the new cluster.
	InitialCluster string `json:"initialCluster"`
	// PeerURLs are the URLs the member advertises.
	PeerURLs []string `json:"peerURLs"`
	// InitialClusterToken is the new cluster's token.
	InitialClusterToken string `json:"initialClusterToken"`
	// ClusterID is the new cluster's ID, as etcd derives it.
	ClusterID string `json:"clusterID"`
	// MemberID is the member's ID, as etcd derives it.
	MemberID string `json:"memberID"`
	// RevisionBump is how much the latest revision was raised.
	RevisionBump uint64 `json:"revisionBump"`
	// MarkCompacted: the revisions up to the bumped one are marked compacted.
	MarkCompacted bool `json:"markCompacted"`
	// Alarms are the active alarms the snapshot held.
	Alarms []snapshot.Alarm `json:"alarms"`
	// AlarmsCleared: the new member starts without them.
	AlarmsCleared bool `json:"alarmsCleared"`
}

// cleanDocument is clean's document.
type cleanDocument struct {
	typeMeta
	// Dir is the directory searched.
	Dir string `json:"dir"`
	// DryRun: the leftovers were listed, not removed.
	DryRun bool `json:"dryRun"`
	// Leftovers are what killed runs left under Dir.
	Leftovers []fsutil.Leftover `json:"leftovers"`
}

// versionDocument is version's document: this binary's identity.
type versionDocument struct {
	typeMeta
	buildinfo.Info
}

// progressLine is one line of the progress stream on stderr under
// -o json|yaml: a phase that ended.
type progressLine struct {
	typeMeta
	// Phase is the phase's name (index, stream, write, ...).
	Phase string `json:"phase"`
	// Unit is what Done counts (bytes, keys).
	Unit string `json:"unit"`
	// Done is how much the phase did.
	Done int64 `json:"done"`
	// Seconds is how long it took.
	Seconds float64 `json:"seconds"`
}

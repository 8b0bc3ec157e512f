package transform

import (
	"github.com/snapshift/snapshift/snapshot"
)

// Report is what a transform did (or, in a dry run, would do).
type Report struct {
	Input  InputSummary     `json:"input"`
	Output *snapshot.Result `json:"output,omitempty"`
	DryRun bool             `json:"dryRun"`
	// Copied counts live keys written byte for byte (unclaimed, or claimed
	// and kept); Replaced, Deleted and Created the changes.
	Copied   int `json:"copied"`
	Replaced int `json:"replaced"`
	Deleted  int `json:"deleted"`
	Created  int `json:"created"`
	// Dropped counts old revisions and tombstones not carried over.
	Dropped int `json:"droppedRevisions"`
	// NewRevision is the revision changed objects were written at (0 if
	// none); CompactRevision where the output is marked compacted.
	NewRevision     int64          `json:"newRevision,omitempty"`
	CompactRevision int64          `json:"compactRevision"`
	Rules           []*RuleReport  `json:"rules"`
	Objects         *ObjectChanges `json:"objects"`
	// Alarms are the input's active etcd alarms; AlarmsCleared says the
	// output holds none of them (the default: see Config.KeepAlarms).
	Alarms        []snapshot.Alarm `json:"alarms,omitempty"`
	AlarmsCleared bool             `json:"alarmsCleared,omitempty"`
	// Restored lists the members a fused restore (Config.Restore) wrote,
	// and Route how (RouteRewrite).
	Restored []RestoredMember `json:"restored,omitempty"`
	Route    string           `json:"route,omitempty"`
	// Timing is where the run's wall time went, phase by phase.
	Timing *Timing `json:"timing,omitempty"`
}

// RestoredMember is one data dir a fused restore wrote.
type RestoredMember struct {
	Name    string `json:"name"`
	DataDir string `json:"dataDir"`
	WALDir  string `json:"walDir,omitempty"`
}

// InputSummary identifies the input.
type InputSummary struct {
	Path            string `json:"path"`
	SHA256          string `json:"sha256,omitempty"`
	Size            int64  `json:"size"`
	CurrentRevision int64  `json:"currentRevision"`
	Entries         int    `json:"entries"`
	LiveKeys        int    `json:"liveKeys"`
	// EtcdPrefix is where the input keeps the cluster's objects.
	EtcdPrefix string `json:"etcdPrefix"`
}

// RuleReport counts one rule's work.
type RuleReport struct {
	Name    string   `json:"name"`
	Seen    int      `json:"seen"`
	Changed int      `json:"changed"`
	Deleted int      `json:"deleted"`
	Created int      `json:"created"`
	Notes   []string `json:"notes,omitempty"`
}

// ObjectChange is one changed, deleted or created key.
type ObjectChange struct {
	Key     string   `json:"key"`
	Action  string   `json:"action"` // replace, delete, create
	Rules   []string `json:"rules"`
	Changes []Change `json:"changes,omitempty"`
}

package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/restart"
)

// clusterInput reads what `cluster restart|check` need from a bundle's
// report.json: its operation.cluster block (the one place the CLI knows
// where report.json keeps it).
func clusterInput(bundle string) (*restart.Input, error) {
	path := filepath.Join(bundle, rebuild.ReportFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("--bundle %s holds no %s: give the directory snapshift rebuild wrote", bundle, rebuild.ReportFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the bundle: %w", err)
	}
	var rep rebuild.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, usagef("%s is not a rebuild report: %v", path, err)
	}
	if rep.Operation == nil || rep.Operation.Cluster == nil {
		return nil, usagef("%s has no operation.cluster (a bundle from an older snapshift): run snapshift rebuild again", path)
	}
	return rep.Operation.Cluster, nil
}

package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/restart"
)

// clusterInput reads what `cluster restart|check` need from a bundle's
// report.json through package bundle (its version checked): the operation
// block's cluster input.
func clusterInput(dir string) (*restart.Input, error) {
	o, err := bundle.Open(dir)
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, usagef("--bundle %s holds no %s: give the directory snapshift rebuild wrote", dir, bundle.ReportFile)
	case errors.As(err, &pathErr):
		return nil, fmt.Errorf("reading the bundle: %w", err)
	case err != nil:
		return nil, usagef("%w", err) // not a report.json of this version
	}
	if o.Report.Operation.Cluster == nil {
		return nil, usagef("%s has no operation.cluster (a bundle from an older snapshift): run snapshift rebuild again", filepath.Join(dir, bundle.ReportFile))
	}
	return o.Report.Operation.Cluster, nil
}

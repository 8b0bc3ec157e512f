// Package calicocrds holds Calico's IPAM CustomResourceDefinitions, as
// published in projectcalico/calico (see README.md for the tag and path).
package calicocrds

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed crd.projectcalico.org_*.yaml
var files embed.FS

// Files returns each CRD's YAML by file name, in name order.
func Files() (names []string, data [][]byte, err error) {
	names, err = fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, nil, err
		}
		data = append(data, b)
	}
	return names, data, nil
}

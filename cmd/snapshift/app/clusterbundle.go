package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/clusterops"
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

// etcdCheckInput is what cluster check's etcd-identity check needs from
// the bundle: the restored cluster report.json records and the first
// node's etcd health-check client certificate (kubernetes/<node>/pki/etcd/).
// nil, no check, for a bundle that records no identities (an older
// snapshift's) or holds no such certificate.
func etcdCheckInput(dir string) (*clusterops.EtcdCheck, error) {
	o, err := bundle.Open(dir)
	if err != nil || o.Report.Etcd == nil {
		return nil, err
	}
	for _, n := range o.Report.Nodes {
		pki := filepath.Join(dir, filepath.FromSlash(n.Dir), "pki", "etcd")
		info := transport.TLSInfo{CertFile: filepath.Join(pki, "healthcheck-client.crt"), KeyFile: filepath.Join(pki, "healthcheck-client.key"),
			TrustedCAFile: filepath.Join(pki, "ca.crt")}
		if _, err := os.Stat(info.KeyFile); err != nil {
			continue
		}
		tlsConfig, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("the bundle's etcd client certificate (%s): %w", pki, err)
		}
		return &clusterops.EtcdCheck{Cluster: o.Report.Etcd.New, TLS: tlsConfig}, nil
	}
	return nil, nil
}

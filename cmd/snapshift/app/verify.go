package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/verify"
)

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a snapshot: file, etcd revisions, Kubernetes values, and the new networks' invariants",
		ArgsUsage: "SNAPSHOT",
		Description: "Checks the sha256 trailer, bbolt's page structure, every revision and KeyValue, the revision\n" +
			"metadata and compaction markers, and that every stored Kubernetes value decodes. With\n" +
			"--service-cidr / --pod-network-cidr it also checks what the remap rules promise: no ClusterIP\n" +
			"outside the range (but --keep-service-ip ones), no duplicates, the RangeAllocation bitmap and the\n" +
			"IPAddress objects equal to what the Services imply, the default ServiceCIDR, node CIDRs inside the\n" +
			"cluster CIDR and disjoint, and the ConfigMaps in agreement. Exit code 5 when a check fails.\n\n" +
			"Example:\n   snapshift verify etcd-new.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "service-cidr", Usage: "the service CIDR the snapshot should use"},
			&cli.StringFlag{Name: "pod-network-cidr", Usage: "the pod CIDR the snapshot should use"},
			&cli.StringSliceFlag{Name: "keep-service-ip", Usage: "NAMESPACE/NAME of a Service allowed outside the range (repeatable)"},
			&cli.StringFlag{Name: "dns-service", Value: "kube-system/kube-dns", Usage: "the cluster DNS Service kubelet clusterDNS must point at"},
			flagSkipHash(), flagEncryption(), flagOutput(), flagQuiet(),
		},
		Action: func(c *cli.Context) error {
			path, err := oneArg(c, "the snapshot file")
			if err != nil {
				return err
			}
			enc, err := loadEncryption(c)
			if err != nil {
				return err
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			r, err := verify.Run(c.Context, verify.Config{Path: path, SkipHashCheck: c.Bool("skip-hash-check"),
				ServiceCIDR: c.String("service-cidr"), PodNetworkCIDR: c.String("pod-network-cidr"),
				KeepServiceIPs: c.StringSlice("keep-service-ip"), DNSService: c.String("dns-service"), Structure: true, Progress: newProgress(c), Encryption: enc})
			if err != nil {
				return err
			}
			if format == "json" {
				if err := writeJSON(c.App.Writer, r); err != nil {
					return err
				}
			} else {
				printVerify(c.App.Writer, r)
			}
			return r.Err()
		},
	}
}

func printVerify(w io.Writer, r *verify.Report) {
	fmt.Fprintf(w, "Verify %s\n", r.Path)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		line := fmt.Sprintf("  %s  %s", mark, c.Name)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, strings.TrimRight(line, ": "))
		for _, p := range c.Problems {
			fmt.Fprintf(w, "          %s\n", p)
		}
	}
	if r.OK {
		fmt.Fprintln(w, "All checks passed.")
	}
}

// verifyOutput is transform's check of its own output before publishing it.
func verifyOutput(c *cli.Context, enc *encryption.Config) func(ctx context.Context, path string) error {
	return func(ctx context.Context, path string) error {
		r, err := verify.Run(ctx, verify.Config{Path: path, ServiceCIDR: c.String("service-cidr"),
			PodNetworkCIDR: c.String("pod-network-cidr"), KeepServiceIPs: c.StringSlice("keep-service-ip"), DNSService: c.String("dns-service"),
			Encryption: enc, JustWritten: true, SkipHashCheck: true})
		if err != nil {
			return fmt.Errorf("checking the new snapshot: %w", err)
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("the new snapshot was not published: %w", err)
		}
		return nil
	}
}

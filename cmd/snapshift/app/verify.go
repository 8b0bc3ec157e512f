package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/buildinfo"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/verify"
)

// verifyOptions are verify's options: the rules' invariant options (the
// new ranges, the kept Services) come from the registry.
type verifyOptions struct {
	common
	rules ruleFlags
	path  string
	// dataDir and walDir: a restored member to check (verify.Member); path
	// is then the optional input snapshot.
	dataDir, walDir string
}

func (o *verifyOptions) setup(c *cli.Context) error {
	if o.dataDir == "" {
		if o.walDir != "" {
			return usagef("--wal-dir goes with --data-dir")
		}
		return o.oneSnapshot(c, &o.path)
	}
	o.streams(c)
	a, err := args(c, 0, 1, "at most one argument with --data-dir, the snapshot the member was restored from")
	if err != nil || len(a) == 0 {
		return err
	}
	o.path = a[0]
	return o.unpack(&o.path)
}

func (o *verifyOptions) Validate() error { return o.validateFormat() }

func (o *verifyOptions) Run(ctx context.Context) error {
	enc, err := o.encryption()
	if err != nil {
		return err
	}
	cfg := migrate.VerifyConfig(o.rules.options())
	cfg.Path, cfg.SkipHashCheck, cfg.Structure, cfg.Progress, cfg.Encryption = o.path, o.skipHash, true, o.progress(), enc
	cfg.EtcdPrefix = o.etcdPrefix
	var r *verify.Report
	if o.dataDir != "" {
		r, err = verify.Member(ctx, verify.MemberConfig{Config: cfg, DataDir: o.dataDir, WALDir: o.walDir, Input: o.path, InputSkipHashCheck: o.skipHash})
	} else {
		r, err = verify.Run(ctx, cfg)
	}
	if err != nil {
		return err
	}
	if o.json() {
		if err := writeJSON(o.stdout, verifyJSON{typeMeta: newTypeMeta("VerifyReport"), Report: r, Snapshift: buildinfo.Get()}); err != nil {
			return err
		}
	} else {
		printVerify(o.stdout, r)
	}
	return r.Err()
}

// verifyJSON is verify's machine report: the library's report and the
// identity of the snapshift that checked.
type verifyJSON struct {
	typeMeta
	*verify.Report
	Snapshift buildinfo.Info `json:"snapshift"`
}

func verifyCommand() *cli.Command {
	o := &verifyOptions{}
	return newCommand(o, append(o.rules.flags(verifyRuleOptions),
		&cli.StringFlag{Name: "data-dir", Destination: &o.dataDir, Usage: "check this restored member data dir instead of a snapshot (SNAPSHOT, if given, is the one it was restored from)"},
		&cli.StringFlag{Name: "wal-dir", Destination: &o.walDir, Usage: "the member's separate WAL dir (default <data-dir>/member/wal)"},
		o.tmpDirFlag(), o.skipHashFlag(), o.encryptionFlag(), o.etcdPrefixFlag(), o.outputFlag(), o.quietFlag()), cli.Command{
		Name:      "verify",
		Usage:     "check a snapshot: file, etcd revisions, Kubernetes values, and the new networks' invariants",
		ArgsUsage: "SNAPSHOT | --data-dir DIR [SNAPSHOT]",
		Description: "Checks the sha256 trailer, bbolt's page structure, every revision and KeyValue, the revision\n" +
			"metadata and compaction markers, and that every stored Kubernetes value decodes. With\n" +
			"--service-cidr / --pod-network-cidr it also checks what the remap rules promise: no ClusterIP\n" +
			"outside the range (but --keep-service-ip ones), no duplicates, the RangeAllocation bitmap and the\n" +
			"IPAddress objects equal to what the Services imply, the default ServiceCIDR, node CIDRs inside the\n" +
			"cluster CIDR and disjoint, and the ConfigMaps in agreement. Exit code 5 when a check fails.\n\n" +
			"With --data-dir it checks a restored member instead, as a backup sidecar validates a data dir before\n" +
			"etcd starts: member/snap/db and the WAL are there, the WAL reads through etcd's own wal package, bbolt's\n" +
			"Tx.Check passes, the consistent index is not below the WAL's snapshot, every check above on the\n" +
			"member's database, and, given SNAPSHOT (the one it was restored from), a revision at least SNAPSHOT's.\n\n" +
			"Example:\n   snapshift verify etcd-new.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16\n" +
			"   snapshift verify --data-dir /var/lib/etcd-new etcd-new.db --service-cidr 172.24.0.0/16",
	})
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

package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/inspect"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

type inspectOptions struct {
	common
	path string
}

func (o *inspectOptions) setup(c *cli.Context) error { return o.oneSnapshot(c, &o.path) }

func (o *inspectOptions) Validate() error { return o.validateFormat() }

func (o *inspectOptions) Run(ctx context.Context) error {
	enc, err := o.encryption()
	if err != nil {
		return err
	}
	r, err := inspect.Run(ctx, inspect.Config{Path: o.path, SkipHashCheck: o.skipHash, Progress: o.progress(), Encryption: enc, EtcdPrefix: o.etcdPrefix})
	if err != nil {
		return err
	}
	if u := o.in.unzipped; u != nil {
		r.Path, r.Compressed = o.in.original, u.Entry
	}
	return o.render(inspectDocument{newTypeMeta("InspectReport"), r}, func(w io.Writer) { printInspect(w, r) })
}

func inspectCommand() *cli.Command {
	o := &inspectOptions{}
	return newCommand(o, []cli.Flag{o.tmpDirFlag(), o.skipHashFlag(), o.encryptionFlag(), o.etcdPrefixFlag(), o.outputFlag(), o.quietFlag()}, cli.Command{
		Name:      "inspect",
		Usage:     "summarise a snapshot: hash, revisions, key counts per resource, encodings, detected CIDRs",
		ArgsUsage: "SNAPSHOT",
		Description: "Checks the sha256 trailer and the bbolt structure, indexes every revision, and reports what\n" +
			"the cluster holds. Reads the file only.\n\n" +
			"Example:\n   snapshift inspect /backup/etcd-2026-11-21.db\n   snapshift inspect -o json snapshot.db | jq .networks",
	})
}

func printInspect(out io.Writer, r *inspect.Report) {
	printSummary(out, r)
	section := func(title string, counts []inspect.Count) {
		if len(counts) == 0 {
			return
		}
		fmt.Fprintf(out, "\n%s:\n", title)
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, c := range counts {
			fmt.Fprintf(w, "  %s\t%d\n", c.Name, c.Count)
		}
		w.Flush()
	}
	section("Resources", r.Resources)
	section("Secrets by type", r.SecretTypes)
	section("Value encodings", r.Encodings)
	section("Encrypted values (provider/version key)", r.Encrypted)
	printDistribution(out, r.Distribution)
	printNetworks(out, r.Networks)
	printCNI(out, r.CNI)
	printNodeCIDRs(out, r.Networks)
}

// printSummary is inspect's header: the file, its revisions and buckets.
func printSummary(out io.Writer, r *inspect.Report) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	hash := "verified (sha256 " + r.SHA256 + ")"
	if !r.HashChecked {
		hash = "none (no trailer; --skip-hash-check)"
	}
	fmt.Fprintf(w, "Snapshot:\t%s\n", r.Path)
	if r.Compressed != "" {
		fmt.Fprintf(w, "Compressed:\tzip (k3s/RKE2 --etcd-snapshot-compress), one entry %q; size and hash below are the snapshot's inside\n", r.Compressed)
	}
	fmt.Fprintf(w, "Size:\t%s (%d bytes, page size %d)\n", fsutil.FormatSize(r.Size), r.Size, r.PageSize)
	fmt.Fprintf(w, "Hash:\t%s\n", hash)
	fmt.Fprintf(w, "Revision:\t%d (last key revision %d)\n", r.CurrentRevision, r.LastRevision)
	fmt.Fprintf(w, "Compaction:\tscheduled %d, finished %d\n", r.Meta.ScheduledCompact, r.Meta.FinishedCompact)
	fmt.Fprintf(w, "Consistent index:\t%d (term %d)\n", r.Meta.ConsistentIndex, r.Meta.Term)
	if r.Meta.StorageVersion != "" {
		fmt.Fprintf(w, "Storage version:\t%s\n", r.Meta.StorageVersion)
	}
	fmt.Fprintf(w, "Keys:\t%d live, %d revisions in the key bucket (%d tombstones)\n", r.LiveKeys, r.Entries, r.Tombstones)
	if r.EtcdPrefix != wellknown.DefaultPrefix {
		fmt.Fprintf(w, "Etcd prefix:\t%s (kube-apiserver --etcd-prefix; objects are counted by resource under it)\n", r.EtcdPrefix)
	}
	var b []string
	for _, bi := range r.Buckets {
		b = append(b, fmt.Sprintf("%s=%d", bi.Name, bi.Keys))
	}
	fmt.Fprintf(w, "Buckets:\t%s\n", strings.Join(b, " "))
	for _, a := range r.Alarms {
		fmt.Fprintf(w, "Alarm:\t%s: active; a plain restore keeps it (transform and restore clear it unless --keep-alarms)\n", a)
	}
	w.Flush()
}

// printNetworks shows the ranges the snapshot records, and where.
func printNetworks(out io.Writer, n *state.Networks) {
	fmt.Fprintf(out, "\nNetworks:\n")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if len(n.ServiceCIDR) == 0 {
		fmt.Fprintf(w, "  service CIDR\t(not recorded)\n")
	}
	for _, s := range n.ServiceCIDR {
		fmt.Fprintf(w, "  service CIDR\t%s\t(%s)\n", strings.Join(s.CIDRs, ","), s.Source)
	}
	if len(n.PodCIDR) == 0 {
		fmt.Fprintf(w, "  pod CIDR\t(not recorded)\n")
	}
	for _, s := range n.PodCIDR {
		fmt.Fprintf(w, "  pod CIDR\t%s\t(%s)\n", strings.Join(s.CIDRs, ","), s.Source)
	}
	if len(n.ClusterDNS) > 0 {
		src := n.ClusterDNSSource
		if src == "" {
			src = "kubelet-config clusterDNS"
		}
		fmt.Fprintf(w, "  cluster DNS\t%s\t(%s)\n", strings.Join(n.ClusterDNS, ","), src)
	}
	for _, err := range n.UnreadErrors() {
		msg, _ := option.Render(err, flagName)
		fmt.Fprintf(w, "  not read\t%s\n", strings.TrimPrefix(msg, state.ErrEncrypted.Error()+": "))
	}
	w.Flush()
}

// printNodeCIDRs lists every Node's pod CIDRs.
func printNodeCIDRs(out io.Writer, n *state.Networks) {
	if len(n.Nodes) > 0 {
		fmt.Fprintf(out, "\nNode pod CIDRs:\n")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, nd := range n.Nodes {
			cidrs := strings.Join(nd.PodCIDRs, ",")
			if cidrs == "" {
				cidrs = "(none)"
			}
			fmt.Fprintf(w, "  %s\t%s\n", nd.Node, cidrs)
		}
		w.Flush()
	}
}

// printCNI shows the CNIs found and where their IPAM keeps pod addresses.
func printCNI(out io.Writer, cnis []state.CNI) {
	fmt.Fprintf(out, "\nCNI:\n")
	if len(cnis) == 0 {
		fmt.Fprintf(out, "  unknown (no %s objects)\n", cni.DisplayList())
		return
	}
	for _, c := range cnis {
		fmt.Fprintf(out, "  %s\n", c)
		fmt.Fprintf(out, "      found by: %s\n", strings.Join(c.Evidence, ", "))
	}
}

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
)

// restoreOptions are restore's options, named as etcdutl's.
type restoreOptions struct {
	common
	cfg      snapshot.RestoreConfig
	peerURLs string
	rules    ruleFlags // any rule flag makes it a fused restore
	route    string
}

func (o *restoreOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "name", Value: "default", Destination: &o.cfg.Name, Usage: "this member's name"},
		&cli.StringFlag{Name: "data-dir", Destination: &o.cfg.DataDir, Usage: "the new data dir (default <name>.etcd); must not exist or be empty"},
		&cli.StringFlag{Name: "wal-dir", Destination: &o.cfg.WALDir, Usage: "a separate WAL dir (default <data-dir>/member/wal); must not exist"},
		&cli.StringFlag{Name: "initial-cluster", Destination: &o.cfg.InitialCluster, Usage: "every member, name=peer-url,... (default <name>=<peer url>)"},
		&cli.StringFlag{Name: "initial-cluster-token", Destination: &o.cfg.InitialClusterToken,
			Usage: "the new cluster's token (default: derived from the snapshot and --initial-cluster, the same for every member; the old cluster's token is refused)"},
		&cli.StringFlag{Name: "initial-advertise-peer-urls", Value: "http://localhost:2380", Destination: &o.peerURLs,
			Usage: "this member's peer URLs, comma-separated (default: its entries in --initial-cluster, else http://localhost:2380)"},
		&cli.Uint64Flag{Name: "bump-revision", Value: snapshot.DefaultRevisionBump, Destination: &o.cfg.RevisionBump,
			Usage: "raise the revision by this much (0 with --mark-compacted=false to disable)"},
		&cli.BoolFlag{Name: "mark-compacted", Value: true, Destination: &o.cfg.MarkCompacted, Usage: "mark the bumped revision compacted (goes with --bump-revision)"},
		&cli.BoolFlag{Name: "keep-alarms", Destination: &o.cfg.KeepAlarms, Usage: "keep the snapshot's active etcd alarms (NOSPACE, CORRUPT); by default the member starts without them"},
		&cli.StringFlag{Name: "route", Value: migrate.RouteRewrite, Destination: &o.route,
			Usage: "with rule flags: rewrite, the only route (the live state is written anew into the member, as transform writes a snapshot; the copy route was removed)"},
		o.writerFlag("; with rule flags (without them etcd's own restore copies the snapshot's database)"), o.tmpDirFlag(), o.skipHashFlag(), o.outputFlag(), o.encryptionFlag(), o.etcdPrefixFlag(), o.quietFlag(), o.profileFlag(),
	}
}

// allFlags are restore's own flags and every rule's.
func (o *restoreOptions) allFlags() []cli.Flag {
	return append(o.flags(), o.rules.flags(allRuleOptions)...)
}

func (o *restoreOptions) setup(c *cli.Context) error {
	if err := o.oneSnapshot(c, &o.cfg.SnapshotPath); err != nil {
		return err
	}
	o.cfg.SkipHashCheck = o.skipHash
	if !c.IsSet("initial-advertise-peer-urls") {
		// Not given: this member's URLs as --initial-cluster lists them,
		// which is the only value restore would accept beside it.
		if own := memberPeerURLs(o.cfg.InitialCluster, o.cfg.Name); len(own) > 0 {
			o.peerURLs = strings.Join(own, ",")
		}
	}
	for _, u := range strings.Split(o.peerURLs, ",") {
		if u = strings.TrimSpace(u); u != "" {
			o.cfg.PeerURLs = append(o.cfg.PeerURLs, u)
		}
	}
	return nil
}

// memberPeerURLs is the peer URLs an --initial-cluster value lists for
// member name, in its order (none when it does not name it or is no list:
// Validate then says what is wrong with it).
func memberPeerURLs(initialCluster, name string) []string {
	var urls []string
	for _, entry := range strings.Split(initialCluster, ",") {
		n, u, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if ok && strings.TrimSpace(n) == name && strings.TrimSpace(u) != "" {
			urls = append(urls, strings.TrimSpace(u))
		}
	}
	return urls
}

func (o *restoreOptions) Validate() error {
	if err := o.validateFormat(); err != nil {
		return err
	}
	if err := o.validateWriter(); err != nil {
		return err
	}
	if err := o.cfg.Validate(); err != nil {
		if errors.Is(err, fsutil.ErrExists) {
			return err // exit 4
		}
		return usagef("%w", err)
	}
	return nil
}

func (o *restoreOptions) Run(ctx context.Context) error {
	ropts := o.rules.options()
	on, err := rules.Selected(ropts)
	if err != nil {
		return err
	}
	if len(on) > 0 {
		return o.runFused(ctx, ropts)
	}
	cfg := o.cfg
	rep, err := snapshot.RestoreWithReport(ctx, cfg)
	if err != nil {
		return err
	}
	if o.json() {
		id, _ := cfg.Identity()
		return writeJSON(o.stdout, restoreDocument{typeMeta: newTypeMeta("RestoreResult"), Name: cfg.Name, DataDir: cfg.DataDir, WALDir: cfg.WALDir,
			InitialCluster: cfg.InitialCluster, PeerURLs: cfg.PeerURLs, InitialClusterToken: cfg.InitialClusterToken, ClusterID: id.ClusterID,
			MemberID: id.MemberID(cfg.Name), RevisionBump: cfg.RevisionBump, MarkCompacted: cfg.MarkCompacted, Alarms: rep.Alarms, AlarmsCleared: rep.AlarmsCleared})
	}
	printAlarms(o.stdout, rep.Alarms, rep.AlarmsCleared, false)
	o.printRestored()
	return nil
}

func (o *restoreOptions) printRestored() {
	cfg := o.cfg
	id, _ := cfg.Identity()
	fmt.Fprintf(o.stdout, "[restore] member %s (ID %s of cluster %s, token %s) restored into %s (initial cluster %s",
		cfg.Name, id.MemberID(cfg.Name), id.ClusterID, cfg.InitialClusterToken, cfg.DataDir, cfg.InitialCluster)
	if cfg.RevisionBump > 0 {
		fmt.Fprintf(o.stdout, ", revision bumped by %d and marked compacted", cfg.RevisionBump)
	}
	fmt.Fprintln(o.stdout, ")")
}

// runFused applies the rules while restoring: no snapshot file is written
// in between, and the member's database is checked as transform checks its
// output before the data dir is renamed into place.
func (o *restoreOptions) runFused(ctx context.Context, ropts rules.Options) error {
	cfg, err := o.migrateConfig(o.cfg.SnapshotPath, ropts)
	if err != nil {
		return err
	}
	cfg.Restore, cfg.KeepAlarms, cfg.Route = []snapshot.RestoreConfig{o.cfg}, o.cfg.KeepAlarms, o.route
	res, err := migrate.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return o.render(transformDocument{newTypeMeta("TransformReport"), res}, func(w io.Writer) {
		printTransform(w, res)
		o.printRestored()
		o.printProfile(w, res.Report)
	})
}

func restoreCommand() *cli.Command {
	o := &restoreOptions{}
	return newCommand(o, o.allFlags(), cli.Command{
		Name:      "restore",
		Usage:     "restore a snapshot into a new etcd member data dir (etcdutl's restore, with safe defaults)",
		ArgsUsage: "SNAPSHOT",
		Description: "Runs etcd's own restore (go.etcd.io/etcd/etcdutl/v3/snapshot) for one member: new member\n" +
			"metadata from --name, --initial-cluster and --initial-advertise-peer-urls. By default the\n" +
			"revision is bumped by 1000000000 and marked compacted, so every client holding an old\n" +
			"resourceVersion relists. The data dir is built under a temporary name and renamed into place;\n" +
			"it must not exist or be empty. Run once per member with the same --initial-cluster and token.\n" +
			"The token defaults to one derived from the snapshot's checksum and --initial-cluster, so the restored\n" +
			"members get a member and cluster ID of their own: an old member still reachable (the same CA, the same\n" +
			"peer URLs) refuses their messages instead of taking them for its own (a token that would give a member\n" +
			"an old member's ID is refused).\n\n" +
			"With rule flags (those of transform, e.g. --service-cidr, or --rules FILE) the rules are applied on\n" +
			"the way, in one pass: the live state is written anew into the member's database, as transform writes\n" +
			"a snapshot (the snapshot's old revisions never reach the member's disk), and checked as transform\n" +
			"checks its output before the data dir is renamed into place; no new snapshot file is written.\n\n" +
			"Example:\n   snapshift restore new.db --name cp1 --data-dir /var/lib/etcd-new \\\n" +
			"     --initial-cluster cp1=https://10.0.0.11:2380 --initial-advertise-peer-urls https://10.0.0.11:2380\n" +
			"   snapshift restore etcd.db --name cp1 --data-dir /var/lib/etcd-new --service-cidr 172.24.0.0/16 ...",
	})
}

package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/snapshot"
)

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "restore a snapshot into a new etcd member data dir (etcdutl's restore, with safe defaults)",
		ArgsUsage: "SNAPSHOT",
		Description: "Runs etcd's own restore (go.etcd.io/etcd/etcdutl/v3/snapshot) for one member: new member\n" +
			"metadata from --name, --initial-cluster and --initial-advertise-peer-urls. By default the\n" +
			"revision is bumped by 1000000000 and marked compacted, so every client holding an old\n" +
			"resourceVersion relists. The data dir is built under a temporary name and renamed into place;\n" +
			"it must not exist or be empty. Run once per member with the same --initial-cluster and token.\n\n" +
			"Example:\n   snapshift restore new.db --name cp1 --data-dir /var/lib/etcd-new \\\n" +
			"     --initial-cluster cp1=https://10.0.0.11:2380 --initial-advertise-peer-urls https://10.0.0.11:2380",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Value: "default", Usage: "this member's name"},
			&cli.StringFlag{Name: "data-dir", Usage: "the new data dir (default <name>.etcd); must not exist or be empty"},
			&cli.StringFlag{Name: "wal-dir", Usage: "a separate WAL dir (default <data-dir>/member/wal); must not exist"},
			&cli.StringFlag{Name: "initial-cluster", Usage: "every member, name=peer-url,... (default <name>=<peer url>)"},
			&cli.StringFlag{Name: "initial-cluster-token", Value: "etcd-cluster", Usage: "the cluster token"},
			&cli.StringFlag{Name: "initial-advertise-peer-urls", Value: "http://localhost:2380", Usage: "this member's peer URLs, comma-separated"},
			&cli.Uint64Flag{Name: "bump-revision", Value: snapshot.DefaultRevisionBump, Usage: "raise the revision by this much (0 with --mark-compacted=false to disable)"},
			&cli.BoolFlag{Name: "mark-compacted", Value: true, Usage: "mark the bumped revision compacted (goes with --bump-revision)"},
			flagSkipHash(), flagOutput(),
		},
		Action: func(c *cli.Context) error {
			in, err := oneArg(c, "the snapshot file")
			if err != nil {
				return err
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			cfg := snapshot.RestoreConfig{
				SnapshotPath: in, Name: c.String("name"), DataDir: c.String("data-dir"), WALDir: c.String("wal-dir"),
				InitialCluster: c.String("initial-cluster"), InitialClusterToken: c.String("initial-cluster-token"),
				SkipHashCheck: c.Bool("skip-hash-check"), RevisionBump: c.Uint64("bump-revision"), MarkCompacted: c.Bool("mark-compacted"),
			}
			for _, u := range strings.Split(c.String("initial-advertise-peer-urls"), ",") {
				if u = strings.TrimSpace(u); u != "" {
					cfg.PeerURLs = append(cfg.PeerURLs, u)
				}
			}
			if err := cfg.Validate(); err != nil {
				if errors.Is(err, fsutil.ErrExists) {
					return err // exit 4
				}
				return usagef("%v", err)
			}
			if err := snapshot.Restore(c.Context, cfg); err != nil {
				return err
			}
			res := map[string]any{"name": cfg.Name, "dataDir": cfg.DataDir, "walDir": cfg.WALDir, "initialCluster": cfg.InitialCluster,
				"peerURLs": cfg.PeerURLs, "revisionBump": cfg.RevisionBump, "markCompacted": cfg.MarkCompacted}
			if format == "json" {
				return writeJSON(c.App.Writer, res)
			}
			fmt.Fprintf(c.App.Writer, "[restore] member %s restored into %s (initial cluster %s", cfg.Name, cfg.DataDir, cfg.InitialCluster)
			if cfg.RevisionBump > 0 {
				fmt.Fprintf(c.App.Writer, ", revision bumped by %d and marked compacted", cfg.RevisionBump)
			}
			fmt.Fprintln(c.App.Writer, ")")
			return nil
		},
	}
}

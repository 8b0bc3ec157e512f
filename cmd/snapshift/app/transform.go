package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
)

// Result is what plan and transform print: the engine's report, the
// network plan the rules made, and the leftover scan.
type Result struct {
	*transform.Report
	Plan      *rules.Plan           `json:"plan,omitempty"`
	Leftovers *rules.LeftoverReport `json:"leftovers,omitempty"`
}

// transformOptions are plan's and transform's options: plan is a transform
// that writes nothing.
type transformOptions struct {
	common
	rules      ruleFlags
	plan       bool // the plan command (always a dry run, no --out)
	input      string
	out        string
	force      bool
	dryRun     bool
	keepAlarms bool
}

func (o *transformOptions) flags() []cli.Flag {
	var fs []cli.Flag
	if !o.plan {
		fs = append(fs,
			&cli.StringFlag{Name: "out", Destination: &o.out, Usage: "the new snapshot file (required unless --dry-run)"},
			&cli.BoolFlag{Name: "force", Destination: &o.force, Usage: "replace an existing --out"},
			&cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "write nothing; report what would change (as plan does; a switch: --dry-run=client says the same)"},
			&cli.BoolFlag{Name: "keep-alarms", Destination: &o.keepAlarms, Usage: "copy the snapshot's active etcd alarms (NOSPACE, CORRUPT) into the output; by default it holds none"})
	}
	fs = append(fs, o.rules.flags(allRuleOptions)...)
	return append(fs, o.skipHashFlag(), o.encryptionFlag(), o.etcdPrefixFlag(), o.outputFlag(), o.quietFlag())
}

func (o *transformOptions) setup(c *cli.Context) error {
	if err := o.oneSnapshot(c, &o.input); err != nil {
		return err
	}
	if o.plan {
		o.dryRun = true
	}
	return nil
}

func (o *transformOptions) Validate() error {
	if !o.dryRun && o.out == "" {
		return usagef("transform needs --out FILE (or --dry-run)")
	}
	return o.validateFormat()
}

func (o *transformOptions) Run(ctx context.Context) error {
	ropts := o.rules.options()
	rs, plan, err := rules.Build(ropts)
	if err != nil {
		return err
	}
	cfg := transform.Config{Input: o.input, Output: o.out, Force: o.force, DryRun: o.dryRun, KeepAlarms: o.keepAlarms}
	if o.dryRun {
		cfg.Output = ""
	}
	res, err := runRules(ctx, &o.common, cfg, ropts, rs, plan)
	if err != nil {
		return err
	}
	if o.json() {
		return writeJSON(o.stdout, res)
	}
	printTransform(o.stdout, res)
	return nil
}

// runRules runs the rules over cfg's input as plan, transform and the
// fused restore do: the leftover scan, the check of the output, and the
// common options (hash check, encryption, prefix, progress).
func runRules(ctx context.Context, o *common, cfg transform.Config, ropts rules.Options, rs []transform.Rule, plan *rules.Plan) (*Result, error) {
	enc, err := o.encryption()
	if err != nil {
		return nil, err
	}
	scan := rules.NewLeftoverScan(plan)
	scan.Encryption = enc
	cfg.SkipHashCheck, cfg.Progress, cfg.EtcdPrefix = o.skipHash, o.progress(), o.etcdPrefix
	cfg.Rules, cfg.Observers, cfg.Encryption, cfg.VerifyOutput = rs, []transform.Observer{scan}, enc, verifyOutput(ropts, enc)
	r, err := transform.Run(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res := &Result{Report: r}
	if plan.Service != nil || plan.Pod != nil {
		res.Plan, res.Leftovers = plan, scan.Report()
	}
	return res, nil
}

// verifyOutput is transform's check of its own output before publishing it.
func verifyOutput(ropts rules.Options, enc *encryption.Config) func(ctx context.Context, path, prefix string) error {
	return func(ctx context.Context, path, prefix string) error {
		cfg := verifyConfig(ropts)
		cfg.Path, cfg.Encryption, cfg.JustWritten, cfg.SkipHashCheck, cfg.EtcdPrefix = path, enc, true, true, prefix
		r, err := verify.Run(ctx, cfg)
		if err != nil {
			return fmt.Errorf("checking the new snapshot: %w", err)
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("the new snapshot was not published: %w", err)
		}
		return nil
	}
}

func planCommand() *cli.Command {
	o := &transformOptions{plan: true}
	return &cli.Command{
		Name:      "plan",
		Usage:     "show what transform would change, writing nothing",
		ArgsUsage: "SNAPSHOT",
		Description: "Runs every rule chosen by flags on SNAPSHOT without writing anything: per rule the objects\n" +
			"that would change (old -> new), exemptions, refusals, and a scan for addresses of the old ranges\n" +
			"that no rule moves (pod IPs, endpoints, annotations, other ConfigMaps, custom resources).\n" +
			"`snapshift rules` lists the rules and their flags.\n\n" +
			"Example:\n   snapshift plan etcd.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16",
		Flags:  o.flags(),
		Action: action(o),
	}
}

func transformCommand() *cli.Command {
	o := &transformOptions{}
	return &cli.Command{
		Name:      "transform",
		Usage:     "write a new snapshot with the chosen rules applied",
		ArgsUsage: "SNAPSHOT",
		Description: "Streams every live key of SNAPSHOT through the rules chosen by flags and writes a new\n" +
			"snapshot to --out (temporary name, fsync, rename; an existing file needs --force). Without rules\n" +
			"it is an identity transform: the same live keys and values, old revisions dropped, marked\n" +
			"compacted. With --dry-run nothing is written and the report says what would change.\n\n" +
			"Example:\n   snapshift transform /backup/etcd.db --out /backup/etcd-new.db",
		Flags:  o.flags(),
		Action: action(o),
	}
}

// maxChangesPerRule bounds the changed objects the text report lists per
// rule (or combination of rules).
const maxChangesPerRule = 50

func printTransform(out io.Writer, res *Result) {
	r := res.Report
	verb := "wrote"
	if r.DryRun {
		verb = "would write"
	}
	fmt.Fprintf(out, "Input:  %s (revision %d, %d live keys, %d revisions)\n", r.Input.Path, r.Input.CurrentRevision, r.Input.LiveKeys, r.Input.Entries)
	if r.Input.EtcdPrefix != state.DefaultPrefix {
		fmt.Fprintf(out, "Prefix: the cluster keeps its objects under %s (kube-apiserver --etcd-prefix); the rules read and write there\n", r.Input.EtcdPrefix)
	}
	if r.Output != nil {
		fmt.Fprintf(out, "Output: %s (%s, sha256 %s)\n", r.Output.Path, humanBytes(r.Output.Size), r.Output.SHA256)
	}
	printKeys(out, r, verb)
	printAlarms(out, r.Alarms, r.AlarmsCleared, r.DryRun)
	if len(r.Rules) > 0 {
		fmt.Fprintln(out, "\nRules:")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  RULE\tSEEN\tCHANGED\tDELETED\tCREATED")
		for _, rr := range r.Rules {
			fmt.Fprintf(w, "  %s\t%d\t%d\t%d\t%d\n", rr.Name, rr.Seen, rr.Changed, rr.Deleted, rr.Created)
		}
		w.Flush()
		for _, rr := range r.Rules {
			for _, n := range rr.Notes {
				fmt.Fprintf(out, "  note (%s): %s\n", rr.Name, n)
			}
		}
	}
	if len(r.Objects) > 0 {
		fmt.Fprintln(out, "\nChanges:")
		shown, hidden := map[string]int{}, 0
		for _, o := range r.Objects {
			// A migration of a large cluster changes tens of thousands of
			// objects: the text lists the first of each rule, JSON lists all.
			rule := strings.Join(o.Rules, ",")
			if shown[rule] >= maxChangesPerRule {
				hidden++
				continue
			}
			shown[rule]++
			fmt.Fprintf(out, "  %-7s %s  [%s]\n", o.Action, o.Key, strings.Join(o.Rules, ","))
			for _, ch := range o.Changes {
				fmt.Fprintf(out, "          %s\n", ch)
			}
		}
		if hidden > 0 {
			fmt.Fprintf(out, "  ... and %d more changes (%d shown per rule; --output json lists every one)\n", hidden, maxChangesPerRule)
		}
	}
	if lo := res.Leftovers; lo != nil {
		fmt.Fprintf(out, "\nLeftovers: addresses of the old ranges (%s) that no rule moves:\n", strings.Join(lo.Ranges, ", "))
		if len(lo.Groups) == 0 {
			fmt.Fprintln(out, "  none")
		}
		for _, g := range lo.Groups {
			fmt.Fprintf(out, "  %s: %d keys\n", g.Resource, g.Keys)
			if len(g.Namespaces) > 0 {
				fmt.Fprintf(out, "    recreated by their controllers once the pods restart; by namespace, in restart order: %s\n", namespaceCounts(g.Namespaces))
			}
			for _, e := range g.Examples {
				if e.Note != "" {
					fmt.Fprintf(out, "      %s (%s)\n", e.Key, e.Note)
				} else {
					fmt.Fprintf(out, "      %s: %s\n", e.Key, strings.Join(e.Addresses, ", "))
				}
			}
		}
		if lo.Encrypted > 0 {
			fmt.Fprintf(out, "  (%d encrypted values not scanned)\n", lo.Encrypted)
		}
	}
}

// printKeys prints the key counts and the revisions.
func printKeys(out io.Writer, r *transform.Report, verb string) {
	dropped, compacted := "dropped", fmt.Sprintf("compacted at %d", r.CompactRevision)
	switch r.Route {
	case transform.RouteCopy: // a copy of the input, edited: etcd compacts at boot
		dropped, compacted = "left for etcd to compact at first boot", "everything older is compacted"
	case transform.RouteRewrite:
		compacted = "everything older is compacted"
	}
	fmt.Fprintf(out, "Keys:   %s %d unchanged, %d replaced, %d created; %d deleted; %d old revisions and tombstones %s\n",
		verb, r.Copied, r.Replaced, r.Created, r.Deleted, r.Dropped, dropped)
	if r.NewRevision > 0 {
		fmt.Fprintf(out, "Revision: changes at %d; %s\n", r.NewRevision, compacted)
	} else {
		fmt.Fprintf(out, "Revision: no changes; %s\n", compacted)
	}
}

// namespaceCounts is "kube-system 3, demo 2".
func namespaceCounts(ns []rules.NamespaceCount) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprintf("%s %d", n.Namespace, n.Keys)
	}
	return strings.Join(s, ", ")
}

// printAlarms says what happened to the input's etcd alarms.
func printAlarms(out io.Writer, alarms []snapshot.Alarm, cleared, dryRun bool) {
	if len(alarms) == 0 {
		return
	}
	var names []string
	for _, a := range alarms {
		names = append(names, a.String())
	}
	switch {
	case cleared && dryRun:
		fmt.Fprintf(out, "Alarms: %s would be cleared (--keep-alarms keeps them)\n", strings.Join(names, ", "))
	case cleared:
		fmt.Fprintf(out, "Alarms: %s cleared: the restored member starts writable (--keep-alarms keeps them)\n", strings.Join(names, ", "))
	default:
		fmt.Fprintf(out, "Alarms: %s kept: the restored member raises them again (a NOSPACE alarm makes it read-only)\n", strings.Join(names, ", "))
	}
}

package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/leftovers"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/wellknown"
)

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
	zip        compressedOutput // --compress (compressed.go)
}

func (o *transformOptions) flags() []cli.Flag {
	var fs []cli.Flag
	if !o.plan {
		fs = append(fs,
			&cli.StringFlag{Name: "out", Destination: &o.out, Usage: "the new snapshot file (required unless --dry-run; a file: not - for standard output)"},
			&cli.BoolFlag{Name: "force", Destination: &o.force, Usage: "replace an existing --out"},
			&cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "write nothing; report what would change (as plan does; a switch: --dry-run=client says the same)"},
			&cli.BoolFlag{Name: "keep-alarms", Destination: &o.keepAlarms, Usage: "copy the snapshot's active etcd alarms (NOSPACE, CORRUPT) into the output; by default it holds none"})
	}
	if !o.plan {
		fs = append(fs, o.compressFlag(), o.writerFlag(""))
	}
	fs = append(fs, o.rules.flags(allRuleOptions)...)
	return append(fs, o.tmpDirFlag(), o.skipHashFlag(), o.encryptionFlag(), o.etcdPrefixFlag(), o.outputFlag(), o.quietFlag(), o.profileFlag())
}

func (o *transformOptions) setup(c *cli.Context) error {
	if err := o.oneSnapshot(c, &o.input); err != nil {
		return err
	}
	if o.plan {
		o.dryRun = true
	}
	o.zip.compressSet = c.IsSet("compress")
	return nil
}

func (o *transformOptions) Validate() error {
	if !o.dryRun && o.out == "" {
		return usagef("transform needs --out FILE (or --dry-run)")
	}
	if err := o.validateWriter(); err != nil {
		return err
	}
	return o.validateFormat()
}

func (o *transformOptions) Run(ctx context.Context) error {
	cfg, err := o.migrateConfig(o.input, o.rules.options())
	if err != nil {
		return err
	}
	cfg.Output, cfg.Force, cfg.DryRun, cfg.KeepAlarms = o.out, o.force, o.dryRun, o.keepAlarms
	if o.plan && cfg.Rules.Webhooks == "" {
		cfg.Rules.Webhooks = rules.WebhooksList // plan names the webhooks that fail closed without being asked (as rebuild does)
	}
	zipped := !o.dryRun && o.wantZip()
	switch {
	case o.dryRun:
		cfg.Output = ""
	case zipped:
		defer o.removePlain()
		if cfg.Output, err = o.plainOutput(); err != nil {
			return err
		}
	}
	res, err := migrate.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if zipped {
		if res.Sidecar, err = o.finishZip(cfg.Output); err != nil {
			return err
		}
		res.Compressed, res.Report.Output.Path = o.out, o.out
		if st, err := os.Stat(o.out); err == nil {
			res.Report.Output.Size = st.Size()
		}
	}
	if o.in.unzipped != nil {
		res.Report.Input.Path = o.in.original
	}
	return o.render(transformDocument{newTypeMeta("TransformReport"), res}, func(w io.Writer) {
		printTransform(w, res)
		o.printProfile(w, res.Report)
	})
}

// migrateConfig is the migration of the input with the rules' options and
// the common options (hash check, encryption, prefix, progress), as plan,
// transform and the fused restore run it; it sizes the collector to the
// input first (sizeGC).
func (o *common) migrateConfig(input string, ropts rules.Options) (migrate.Config, error) {
	sizeGC(input)
	enc, err := o.encryption()
	if err != nil {
		return migrate.Config{}, err
	}
	cfg := migrate.Config{Rules: ropts, Engine: migrate.Engine{Input: input, SkipHashCheck: o.skipHash,
		Progress: o.progress(), EtcdPrefix: o.etcdPrefix, Encryption: enc, Writer: snapshot.WriterKind(o.writer)}}
	if o.json() {
		cfg.LeftoverExamples = -1 // a script reads every key; the text lists ten per resource
	}
	return cfg, nil
}

func planCommand() *cli.Command {
	o := &transformOptions{plan: true}
	return newCommand(o, o.flags(), cli.Command{
		Name:      "plan",
		Usage:     "show what transform would change, writing nothing",
		ArgsUsage: "SNAPSHOT",
		Description: "Runs every rule chosen by flags on SNAPSHOT without writing anything: per rule the objects\n" +
			"that would change (old -> new), exemptions, refusals, and a scan for addresses of the old ranges\n" +
			"that no rule moves (pod IPs, endpoints, annotations, other ConfigMaps, custom resources).\n" +
			"`snapshift rules` lists the rules and their flags.\n\n" +
			"Example:\n   snapshift plan etcd.db --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16",
	})
}

func transformCommand() *cli.Command {
	o := &transformOptions{}
	return newCommand(o, o.flags(), cli.Command{
		Name:      "transform",
		Usage:     "write a new snapshot with the chosen rules applied",
		ArgsUsage: "SNAPSHOT",
		Description: "Streams every live key of SNAPSHOT through the rules chosen by flags and writes a new\n" +
			"snapshot to --out (temporary name, fsync, rename; an existing file needs --force). Without rules\n" +
			"it is an identity transform: the same live keys and values, old revisions dropped, marked\n" +
			"compacted. With --dry-run nothing is written and the report says what would change.\n\n" +
			"Example:\n   snapshift transform /backup/etcd.db --out /backup/etcd-new.db",
	})
}

// maxChangesPerRule bounds the changed objects the text report lists per
// rule (or combination of rules).
const maxChangesPerRule = 50

func printTransform(out io.Writer, res *migrate.Result) {
	r := res.Report
	verb := "wrote"
	if r.DryRun {
		verb = "would write"
	}
	fmt.Fprintf(out, "Input:  %s (revision %d, %d live keys, %d revisions)\n", r.Input.Path, r.Input.CurrentRevision, r.Input.LiveKeys, r.Input.Entries)
	if r.Input.EtcdPrefix != wellknown.DefaultPrefix {
		fmt.Fprintf(out, "Prefix: the cluster keeps its objects under %s (kube-apiserver --etcd-prefix); the rules read and write there\n", r.Input.EtcdPrefix)
	}
	if r.Output != nil {
		fmt.Fprintf(out, "Output: %s (%s, sha256 %s)\n", r.Output.Path, fsutil.FormatSize(r.Output.Size), r.Output.SHA256)
	}
	printCompressed(out, res)
	printKeys(out, r, verb)
	printAlarms(out, r.Alarms, r.AlarmsCleared, r.DryRun)
	printRules(out, r)
	if r.Objects.Len() > 0 {
		fmt.Fprintln(out, "\nChanges:")
		shown, hidden := map[string]int{}, 0
		list := func(o migrate.ObjectChange, from *migrate.ObjectChange) {
			// A migration of a large cluster changes tens of thousands of
			// objects: the text lists the first of each rule, JSON lists all.
			n := 1
			if from != nil {
				n = 2 // a rename is two objects: JSON lists its create and its delete
			}
			rule := strings.Join(o.Rules, ",")
			if shown[rule]+n > maxChangesPerRule {
				hidden += n
				return
			}
			shown[rule] += n
			printObjectChange(out, o, from)
		}
		// A rename is a create and, right after it, the delete of the key it
		// was renamed from: held until the next object says which.
		var created *migrate.ObjectChange
		err := r.Objects.Each(func(o migrate.ObjectChange) error {
			if created != nil {
				c := *created
				created = nil
				if renameOf(c, o) {
					list(c, &o)
					return nil
				}
				list(c, nil)
			}
			if _, ok := renamedFrom(o); ok {
				created = &o
				return nil
			}
			list(o, nil)
			return nil
		})
		if created != nil {
			list(*created, nil)
		}
		if err != nil {
			fmt.Fprintf(out, "  (the rest cannot be listed: %v)\n", err)
		}
		if hidden > 0 {
			fmt.Fprintf(out, "  ... and %d more changes (%d shown per rule; --output json lists every one)\n", hidden, maxChangesPerRule)
		}
	}
	if r.DryRun {
		printLiveAlternative(out, res.Plan) // advice before the change: plan's
	}
	printScale(out, res.Plan)
	printLeftoverScan(out, res.Leftovers)
}

// printScale prints the scale plan's warnings: what the cluster's size
// asks of the window.
func printScale(out io.Writer, p *rules.Plan) {
	if p == nil || p.Scale == nil || len(p.Scale.Warnings) == 0 {
		return
	}
	fmt.Fprintf(out, "\nScale: %d nodes, %d pods, %d Services, %d EndpointSlices, %d DaemonSets\n", p.Scale.Nodes, p.Scale.Pods, p.Scale.Services, p.Scale.EndpointSlices, p.Scale.DaemonSets)
	for _, w := range p.Scale.Warnings {
		fmt.Fprintf(out, "  warning: %s\n", w)
	}
}

// printObjectChange prints one changed object as kubectl names it
// (svc/prod/web; -o json has the etcd key) with its changes, leaving out a
// row that changes nothing (a bitmap of as many addresses as before): an
// object with one change on one line, with more one line per change under
// it. from, when set, is the delete of the key the created o was renamed
// from: the two are one rename.
func printObjectChange(out io.Writer, o migrate.ObjectChange, from *migrate.ObjectChange) {
	action, name := o.Action, wellknown.KubectlName(o.Key)
	var rows []string
	for _, ch := range o.Changes {
		if ch.Old != "" && ch.Old == ch.New {
			continue
		}
		if from != nil && ch.Field == "renamed from" {
			continue
		}
		rows = append(rows, ch.String())
	}
	if from != nil {
		old := wellknown.KubectlName(from.Key)
		if dir := old[:strings.LastIndex(old, "/")+1]; strings.HasPrefix(name, dir) {
			name = strings.TrimPrefix(name, dir) // ip/192.168.0.1 -> 172.24.0.1
		}
		action, name = "rename", old+" -> "+name
	}
	rules := strings.Join(o.Rules, ",")
	if len(rows) == 1 {
		fmt.Fprintf(out, "  %-7s %s  %s  [%s]\n", action, name, rows[0], rules)
		return
	}
	fmt.Fprintf(out, "  %-7s %s  [%s]\n", action, name, rules)
	for _, row := range rows {
		fmt.Fprintf(out, "          %s\n", row)
	}
}

// renamedFrom is the key a created object was renamed from, if it was.
func renamedFrom(o migrate.ObjectChange) (string, bool) {
	if o.Action != "create" {
		return "", false
	}
	for _, ch := range o.Changes {
		if ch.Field == "renamed from" && ch.New != "" {
			return ch.New, true
		}
	}
	return "", false
}

// renameOf reports whether del is the delete of the key created was
// renamed from, by the same rules: the other half of one rename.
func renameOf(created, del migrate.ObjectChange) bool {
	src, ok := renamedFrom(created)
	if !ok || del.Action != "delete" || !slices.Equal(created.Rules, del.Rules) {
		return false
	}
	for _, ch := range del.Changes {
		if ch.Field == "renamed" && ch.Old == src {
			return true
		}
	}
	return false
}

// printRules prints the rules that acted and every rule's notes.
func printRules(out io.Writer, r *migrate.Report) {
	// A rule that did nothing gets no row (k3s-applied on a kubeadm
	// cluster); -o json lists every rule that ran.
	acted := r.Rules[:0:0]
	for _, rr := range r.Rules {
		if rr.Changed+rr.Deleted+rr.Created > 0 {
			acted = append(acted, rr)
		}
	}
	if len(r.Rules) > 0 {
		fmt.Fprintln(out, "\nRules:")
		if len(acted) == 0 {
			fmt.Fprintln(out, "  no rule changed anything")
		}
	}
	if len(acted) > 0 {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  RULE\tSEEN\tCHANGED\tDELETED\tCREATED")
		for _, rr := range acted {
			fmt.Fprintf(w, "  %s\t%d\t%d\t%d\t%d\n", rr.Name, rr.Seen, rr.Changed, rr.Deleted, rr.Created)
		}
		w.Flush()
	}
	for _, rr := range r.Rules {
		for _, n := range rr.Notes {
			fmt.Fprintf(out, "  note (%s): %s\n", rr.Name, n)
		}
	}
}

// leftoverTextExamples is how many keys the text lists per leftover group.
const leftoverTextExamples = 10

// printLeftoverScan prints the leftover scan: per resource, its keys (ten
// examples; -o json has every one).
func printLeftoverScan(out io.Writer, lo *leftovers.LeftoverReport) {
	if lo == nil {
		return
	}
	fmt.Fprintf(out, "\nLeftovers: addresses of the old ranges (%s) that no rule moves:\n", strings.Join(lo.Ranges, ", "))
	if len(lo.Groups) == 0 {
		fmt.Fprintln(out, "  none")
	}
	for _, g := range lo.Groups {
		fmt.Fprintf(out, "  %s: %d keys\n", g.Resource, g.Keys)
		if len(g.Namespaces) > 0 {
			fmt.Fprintf(out, "    recreated by their controllers once the pods restart; by namespace, in restart order: %s\n", namespaceCounts(g.Namespaces))
		}
		for i, e := range g.Examples {
			if i == leftoverTextExamples {
				break // the scan may hold every key (rebuild's report.json does): the text lists ten
			}
			switch {
			case e.Note != "" && len(e.Addresses) > 0:
				fmt.Fprintf(out, "      %s: %s, %s\n", wellknown.KubectlName(e.Key), strings.Join(e.Addresses, ", "), e.Note)
			case e.Note != "":
				fmt.Fprintf(out, "      %s (%s)\n", wellknown.KubectlName(e.Key), e.Note)
			default:
				fmt.Fprintf(out, "      %s: %s\n", wellknown.KubectlName(e.Key), strings.Join(e.Addresses, ", "))
			}
		}
		if more := g.Keys - min(len(g.Examples), leftoverTextExamples); more > 0 && len(g.Examples) > 0 {
			fmt.Fprintf(out, "      … and %d more (--output json lists every one)\n", more)
		}
	}
	if lo.Encrypted > 0 {
		fmt.Fprintf(out, "  (%d encrypted values not scanned)\n", lo.Encrypted)
	}
}

// printKeys prints the key counts and the revisions.
func printKeys(out io.Writer, r *migrate.Report, verb string) {
	dropped, compacted := "dropped", fmt.Sprintf("compacted at %d", r.CompactRevision)
	if r.Route == migrate.RouteRewrite {
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
func namespaceCounts(ns []leftovers.NamespaceCount) string {
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

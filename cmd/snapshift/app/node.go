package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/nodeops"
)

// nodeOptions are the options of node apply, rollback, confirm and
// rollback-if-unconfirmed.
type nodeOptions struct {
	common
	cfg nodeops.Config
	op  string // the subcommand
}

func (o *nodeOptions) flags() []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "bundle", Destination: &o.cfg.Bundle, Usage: "the rebuild bundle on this node (report.json, kubernetes/<node>/, etcd/<member>/)"},
		&cli.StringFlag{Name: "node", Destination: &o.cfg.Node, Usage: "this control-plane node's name, as report.json names it"},
		&cli.StringFlag{Name: "root", Value: "/", Destination: &o.cfg.Root, Usage: "the host's root directory (tests: a temporary tree)"},
	}
	if o.op != "confirm" {
		fs = append(fs,
			&cli.DurationFlag{Name: "timeout", Value: nodeopsDefaultTimeout, Destination: &o.cfg.Timeout, Usage: "bound on each wait (static pods stopping, etcd, kube-apiserver)"},
			&cli.BoolFlag{Name: "skip-health", Destination: &o.cfg.SkipHealth, Usage: "do not wait for etcd and kube-apiserver after starting the kubelet, nor ask the other etcd peers who they are before it"})
	}
	fs = append(fs, o.outputFlag(), &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &o.quiet,
		Usage: "print nothing but errors (-o json still prints its document)"})
	if o.op == "apply" {
		fs = append(fs, &cli.BoolFlag{Name: "preflight-only", Destination: &o.cfg.PreflightOnly, Usage: "run the checks and say what apply would back up, move and restore; change nothing"},
			&cli.BoolFlag{Name: "stop-only", Destination: &o.cfg.StopOnly, Usage: "back up and stop the old control plane (its etcd member) and stop there: the first phase on every control-plane node, before any restored member starts"},
			&cli.DurationFlag{Name: "rollback-after", Destination: &o.cfg.RollbackAfter, Usage: "arm a systemd timer that rolls this node back after `DURATION` unless snapshift node confirm runs before (opt-in; refused before any change where systemd-run or a running systemd is missing)"})
	}
	return fs
}

const nodeopsDefaultTimeout = 5 * time.Minute

func (o *nodeOptions) setup(c *cli.Context) error { return o.noArgs(c) }

func (o *nodeOptions) Validate() error {
	if o.cfg.Bundle == "" || o.cfg.Node == "" {
		return usagef("give --bundle DIR and --node NAME")
	}
	if o.cfg.StopOnly && o.cfg.PreflightOnly {
		return usagef("--stop-only stops the old control plane and --preflight-only changes nothing: give one of them")
	}
	if d := o.cfg.RollbackAfter; d < 0 || (d > 0 && d < time.Second) {
		return usagef("--rollback-after %s: give a duration of at least a second (30m gives time to apply and check), or leave the flag out", d)
	}
	if err := o.validateFormat(); err != nil {
		return err
	}
	switch {
	case o.quiet:
	case o.json(): // stdout is the one document: the "[phase] ..." lines go to stderr
		o.cfg.Out = o.stderr
	default:
		o.cfg.Out = o.stdout
	}
	if err := checkBundle(o.cfg.Bundle, o.cfg.Node); err != nil {
		return err
	}
	if o.cfg.Root != "" {
		if fi, err := os.Stat(o.cfg.Root); err != nil {
			return usagef("--root %s does not exist: give the host's root directory (/, the default)", o.cfg.Root)
		} else if !fi.IsDir() {
			return usagef("--root %s is not a directory: give the host's root directory (/, the default)", o.cfg.Root)
		}
	}
	return o.cfg.Validate()
}

// checkBundle is the command line's part of a node operation: --bundle is
// a directory with the report.json of a rebuild, and --node one of its
// nodes (exit 2, with the nodes it has and the one probably meant).
func checkBundle(dir, node string) error {
	b, err := os.ReadFile(filepath.Join(dir, bundle.ReportFile))
	if err != nil {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return usagef("--bundle %s is not a directory: give the output directory of snapshift rebuild", dir)
		}
		return usagef("--bundle %s holds no %s: give the output directory of snapshift rebuild (the directory with report.json and RUNBOOK.md)", dir, bundle.ReportFile)
	}
	var r struct {
		Nodes []struct {
			Name string `json:"name"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return usagef("--bundle %s: %s is not a rebuild report: %v", dir, bundle.ReportFile, err)
	}
	var names []string
	for _, n := range r.Nodes {
		if n.Name == node {
			return nil
		}
		names = append(names, n.Name)
	}
	near := closest(node, names)
	if len(near) == len(names) {
		near = nil // "did you mean any of them" says nothing
	}
	return usagef("--node %q is not a node of the bundle %s%s (it has %s)", node, dir, didYouMean(near), strings.Join(names, ", "))
}

func (o *nodeOptions) Run(ctx context.Context) error {
	var res *nodeops.Result
	var err error
	switch o.op {
	case "rollback":
		res, err = nodeops.Rollback(ctx, o.cfg)
	case "confirm":
		res, err = nodeops.Confirm(ctx, o.cfg)
	case "rollback-if-unconfirmed":
		res, err = nodeops.RollbackIfUnconfirmed(ctx, o.cfg)
	default:
		res, err = nodeops.Apply(ctx, o.cfg)
	}
	if o.json() {
		doc := nodeDocument{typeMeta: newTypeMeta(nodeKinds[o.op]), Result: res}
		if err != nil {
			doc.Error = errorMessage(err)
		}
		if werr := writeJSON(o.stdout, doc); werr != nil && err == nil {
			err = werr
		}
	} else if !o.quiet && len(res.Steps) > 0 { // a refusal before the first step is the error's line alone
		fmt.Fprintln(o.stdout, nodeClosingLine(res))
	}
	return err
}

// nodeKinds are the kinds of the node subcommands' documents.
var nodeKinds = map[string]string{"apply": "NodeApplyResult", "rollback": "NodeRollbackResult",
	"rollback-if-unconfirmed": "NodeRollbackResult", "confirm": "NodeConfirmResult"}

// nodeDocument is node apply|rollback|confirm's -o json|yaml document: the
// operation's nodeops.Result (outcome, steps, phases and their seconds),
// with the error's message when it failed.
type nodeDocument struct {
	typeMeta
	*nodeops.Result
	Error string `json:"error,omitempty"`
}

// nodeClosingLine is the text's last line: the outcome, the total and each
// phase's time, "node apply cp1: done in 41.2s (preflight 0.3s, backup 2.1s, ...)".
func nodeClosingLine(r *nodeops.Result) string {
	head := fmt.Sprintf("node %s %s: %s", r.Operation, r.Node, r.Outcome)
	if r.FailedPhase != "" {
		head += " at " + r.FailedPhase
	}
	phases := make([]phase, len(r.Phases))
	for i, p := range r.Phases {
		phases[i] = phase(p)
	}
	return closingLine(head, r.Seconds, phases)
}

func nodeCommand() *cli.Command {
	apply, rollback := &nodeOptions{op: "apply"}, &nodeOptions{op: "rollback"}
	confirm, ifUnconfirmed := &nodeOptions{op: "confirm"}, &nodeOptions{op: "rollback-if-unconfirmed"}
	return &cli.Command{
		Name:  "node",
		Usage: "put one control-plane node's part of a rebuild bundle in place, or take it out again",
		Subcommands: []*cli.Command{{
			Name:  "apply",
			Usage: "preflight, back up, stop the static pods and the kubelet, install, clean the CNI's host state, start, wait for health",
			// The steps from bundle.ApplySteps, the one list nodeops runs
			// (TestStepsDocumented) and the runbook renders.
			Description: "Run as root on the control-plane node, on every control-plane node at the same time (etcd needs its quorum).\n" +
				"In order, it:\n" + bundle.ApplyStepsText("  ") +
				"Safe to run again: a finished step is skipped, the backup is made once. Ends with one line of each phase's time; -o json|yaml prints a NodeApplyResult\n" +
				"document instead (outcome, steps done and skipped, each phase's seconds), the [phase] lines on stderr.\n\n" +
				"With several control-plane nodes, run it in two phases: first with --stop-only on every node (backs up and stops\n" +
				"the old control plane, its etcd data dir moved into the backup), then without it on every node at the same time.\n\n" +
				"With --rollback-after DURATION, right after the backup it arms a transient systemd timer (systemd-run, unit\n" +
				"snapshift-rollback-<node>) that runs snapshift node rollback-if-unconfirmed DURATION later: unless snapshift node\n" +
				"confirm ran before, the node rolls back, even after the SSH session that ran apply has ended. A reboot removes\n" +
				"the timer (transient units live in /run).\n\n" +
				"Example:\n   snapshift node apply --bundle /root/snapshift-bundle --node cp1 --rollback-after 30m",
			Flags:  apply.flags(),
			Action: action(apply),
		}, {
			Name:  "rollback",
			Usage: "put back every path apply backed up, byte for byte, and restart the old control plane",
			Description: "Run on every control-plane node at the same time. Stops the bundle's static pods and the kubelet, restores\n" +
				"what backup.json records, waits (up to --timeout) until no old peer URL answers as a member of the restored etcd\n" +
				"cluster, starts the kubelet and waits for the old etcd and kube-apiserver. Ends with one line of each phase's time\n" +
				"(-o json|yaml: a NodeRollbackResult document).\n\n" +
				"Example:\n   snapshift node rollback --bundle /root/snapshift-bundle --node cp1",
			Flags:  rollback.flags(),
			Action: action(rollback),
		}, {
			Name:  "confirm",
			Usage: "record on this node that the migrated cluster was checked healthy; removes apply --rollback-after's timer",
			Description: "Run on every control-plane node once snapshift cluster check has passed. Records the confirmation in\n" +
				"backup.json and stops the snapshift-rollback-<node> timer, so the deadline no longer rolls the node back.\n" +
				"Refused (exit 4) before apply has finished or after a rollback.\n\n" +
				"Example:\n   snapshift node confirm --bundle /root/snapshift-bundle --node cp1",
			Flags:  confirm.flags(),
			Action: action(confirm),
		}, {
			Name:  "rollback-if-unconfirmed",
			Usage: "what apply --rollback-after's timer runs at the deadline: node rollback, unless node confirm ran",
			Description: "Takes the node's lock (waiting for an apply still running), then rolls back unless backup.json records a\n" +
				"confirmation or a rollback. Run by the systemd timer; run by hand it does the same.",
			Flags:  ifUnconfirmed.flags(),
			Action: action(ifUnconfirmed),
		}},
	}
}

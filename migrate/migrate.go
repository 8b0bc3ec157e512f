// Package migrate is the one thing snapshift does: build the rules the
// options select, stream a snapshot's live state through them (transform)
// with the leftover scan beside them, and check the result (verify) before
// it is published, to a new snapshot file or, in one pass, into the data
// dirs of new etcd members (the fused restore). plan, transform, restore
// and rebuild call Run and only render its Result.
package migrate

import (
	"context"
	"fmt"
	"reflect"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/leftovers"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
)

// ErrRefused is wrapped by errors that refuse a change the input or the
// options make unsafe (a rule's refusal, an object that does not
// round-trip).
var ErrRefused = transform.ErrRefused

// Report is the engine's report of one run.
type Report = transform.Report

// Observer sees every output value beside the leftover scan.
type Observer = transform.Observer

// RouteRewrite is the fused restore's route (Config.Route), the only one.
const RouteRewrite = transform.RouteRewrite

// Config configures Run.
type Config struct {
	// Input is the snapshot to migrate. Required.
	Input string
	// Output is the new snapshot file. Required unless DryRun or Restore.
	Output string
	// Force replaces an existing Output. Default: an existing Output is an
	// error.
	Force bool
	// DryRun writes nothing: the Result says what would change. Requires
	// no Output and no Restore.
	DryRun bool
	// Restore, instead of Output, restores the result straight into these
	// members' data dirs in the same pass (the fused restore): the live
	// state is written anew into the first member, checked, and copied to
	// the others; no snapshot file is written. Default: none.
	Restore []snapshot.RestoreConfig
	// Route is "" or RouteRewrite; "copy" (removed) is refused. Requires
	// Restore.
	Route string
	// SkipHashCheck accepts an input without a sha256 trailer (a raw
	// member/snap/db). Default: the trailer is required and checked.
	SkipHashCheck bool
	// KeepAlarms keeps the input's active etcd alarms in the output.
	// Default: the output holds none.
	KeepAlarms bool
	// Encryption decrypts (and re-encrypts) values encrypted at rest.
	// Default: none; a rule that claims an encrypted value refuses.
	Encryption *encryption.Config
	// EtcdPrefix is where the cluster keeps its objects (kube-apiserver's
	// --etcd-prefix). Default: detected from the snapshot.
	EtcdPrefix string
	// Progress receives phase events. Optional.
	Progress progress.Reporter
	// Rules select and configure the rules. The zero value selects none:
	// an identity transform.
	Rules rules.Options
	// Observers see every output value beside the leftover scan (rebuild's
	// old-address scan). Optional.
	Observers []Observer
	// LeftoverExamples bounds the keys the leftover scan lists per
	// resource. Default 10; -1 lists every one (the CLI's -o json, for
	// scripts).
	LeftoverExamples int
	// Writer is how the output's (or the first member's) `key` bucket is
	// written: snapshot.WriterBulk (the default, "") or snapshot.WriterBbolt,
	// bbolt's own Put, the fallback if a future bbolt changes its format.
	Writer snapshot.WriterKind
}

// Result is what one run did: the engine's report, the network plan the
// rules made and the leftover scan (those two only when a network rule
// moved a range).
type Result struct {
	*transform.Report
	Plan      *rules.Plan               `json:"plan,omitempty"`
	Leftovers *leftovers.LeftoverReport `json:"leftovers,omitempty"`
	// Compressed is the zip the caller wrote the output into (a compressed
	// k3s/RKE2 snapshot), and Sidecar the .metadata file it copied beside
	// it; Run leaves both empty.
	Compressed string `json:"compressed,omitempty"`
	Sidecar    string `json:"metadataSidecar,omitempty"`
}

// Run migrates cfg.Input. On error nothing is left at the output.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	rs, plan, err := rules.Build(cfg.Rules)
	if err != nil {
		return nil, err
	}
	scan := leftovers.NewLeftoverScan(plan)
	scan.Encryption = cfg.Encryption
	if cfg.LeftoverExamples != 0 {
		scan.MaxExamples = cfg.LeftoverExamples
	}
	tc := transform.Config{
		Input: cfg.Input, Output: cfg.Output, Force: cfg.Force, DryRun: cfg.DryRun,
		Restore: cfg.Restore, Route: cfg.Route, KeepAlarms: cfg.KeepAlarms,
		SkipHashCheck: cfg.SkipHashCheck, Progress: cfg.Progress, EtcdPrefix: cfg.EtcdPrefix, Encryption: cfg.Encryption,
		Rules: rs, Observers: append([]Observer{scan}, cfg.Observers...), Writer: cfg.Writer,
		VerifyOutput: verifyOutput(cfg.Rules, cfg.Encryption),
	}
	r, err := transform.Run(ctx, tc)
	if err != nil {
		return nil, err
	}
	res := &Result{Report: r}
	switch {
	case plan.Service != nil || plan.Pod != nil:
		res.Plan, res.Leftovers = plan, scan.Report()
	case len(plan.Webhooks) > 0:
		res.Plan = plan // the webhooks rule's findings, without a range move
	}
	return res, nil
}

// verifyOutput is the check of the output before it is published: what
// the rules with these options promise.
func verifyOutput(ro rules.Options, enc *encryption.Config) func(ctx context.Context, path, prefix string) error {
	return func(ctx context.Context, path, prefix string) error {
		cfg := VerifyConfig(ro)
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

// VerifyConfig is the verify configuration that checks what the rules with
// these options promise: every registered option marked Verify, copied to
// the verify.Config field of the same name (TestVerifyConfig holds every
// such option to having one).
func VerifyConfig(ro rules.Options) verify.Config {
	var c verify.Config
	v := reflect.ValueOf(&c).Elem()
	for _, opt := range rules.AllOptions(&ro) {
		if opt.Verify {
			v.FieldByName(opt.Field).Set(reflect.ValueOf(opt.Value).Elem())
		}
	}
	return c
}

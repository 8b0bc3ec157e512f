// Package migrate is the one thing snapshift does: build the rules the
// options select, stream a snapshot's live state through them (transform)
// with the leftover scan beside them, and check the result (verify) before
// it is published, to a new snapshot file or, in one pass, into the data
// dirs of new etcd members (the fused restore). plan, transform, restore
// and rebuild call Run and only render its Result.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/leftovers"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
)

// ErrRefused is wrapped by errors that refuse a change the input or the
// options make unsafe (a rule's refusal, an object that does not
// round-trip).
var ErrRefused = transform.ErrRefused

// Report is the engine's report of one run.
type Report = transform.Report

// ObjectChange is one changed, deleted or created key of a Report.
type ObjectChange = transform.ObjectChange

// Observer sees every output value beside the leftover scan.
type Observer = transform.Observer

// RouteRewrite is the fused restore's route (Config.Route), the only one.
const RouteRewrite = transform.RouteRewrite

// Engine is the engine's configuration (transform.Config), re-exported so
// that callers outside the pipeline need not import transform.
type Engine = transform.Config

// Config configures Run: the engine's configuration (transform.Config:
// Input, Output, Force, DryRun, Restore, Route, SkipHashCheck, KeepAlarms,
// Encryption, EtcdPrefix, Progress, Observers, Writer, ...), declared once there and
// embedded here as Engine, plus the rules' options. Run builds the engine's Rules and
// VerifyOutput from Rules: leave those two empty (Run refuses them), and
// Observers see every output value beside the leftover scan.
type Config struct {
	Engine
	// Rules select and configure the rules. The zero value selects none:
	// an identity transform. It shadows Engine.Rules, which Run
	// builds from it.
	Rules rules.Options
	// LeftoverExamples bounds the keys the leftover scan lists per
	// resource. Default 10; -1 lists every one (the CLI's -o json, for
	// scripts).
	LeftoverExamples int
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
	if cfg.Engine.Rules != nil || cfg.VerifyOutput != nil {
		return nil, errors.New("migrate: the engine's Rules and VerifyOutput are built from Config.Rules; leave them empty")
	}
	rs, plan, err := rules.Build(cfg.Rules)
	if err != nil {
		return nil, err
	}
	scan := leftovers.NewLeftoverScan(plan)
	scan.Encryption = cfg.Encryption
	if cfg.LeftoverExamples != 0 {
		scan.MaxExamples = cfg.LeftoverExamples
	}
	tc := cfg.Engine // every engine option as given, then what Run derives
	tc.Rules = rs
	tc.Observers = append([]Observer{scan}, cfg.Observers...)
	tc.VerifyOutput = verifyOutput(cfg.Rules, cfg.Encryption)
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

package transform

import (
	"context"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/state"
)

// Action is what a rule decides for one object.
type Action int

const (
	// Keep leaves the object as it is (as far as this rule is concerned).
	Keep Action = iota
	// Replace means the rule changed Object.Value in place.
	Replace
	// Delete removes the key from the output.
	Delete
)

func (a Action) String() string {
	switch a {
	case Replace:
		return "replace"
	case Delete:
		return "delete"
	}
	return "keep"
}

// Change is one field change, for the report. Old and New are display
// strings; rules never put Secret data in them.
type Change struct {
	Field string `json:"field"`
	Old   string `json:"old,omitempty"`
	New   string `json:"new,omitempty"`
}

// String is the change as the reports print it: "field: old -> new",
// "field: new" for an added value, "field: old (removed)".
func (c Change) String() string {
	switch {
	case c.Old != "" && c.New != "":
		return c.Field + ": " + c.Old + " -> " + c.New
	case c.New != "":
		return c.Field + ": " + c.New
	}
	return c.Field + ": " + c.Old + " (removed)"
}

// NewObject is a key a rule creates.
type NewObject struct {
	Key     string
	Value   *codec.Object
	Changes []Change
	// Encryption, when set, is how to store it (a renamed object keeps its
	// source's). Default: as kube-apiserver would write a new object of its
	// resource under the EncryptionConfiguration (identity without one).
	Encryption *encryption.Info
}

// Result is a rule's decision about one object.
type Result struct {
	Action  Action
	Changes []Change
	// Create lists keys to create alongside this decision (e.g. an object
	// renamed to a new key: Delete this one, Create the new one).
	Create []NewObject
}

// Rule is one transformation. Implementations live in package rules.
type Rule interface {
	// Name is unique among rules, e.g. "service-cidr".
	Name() string
	// Prefixes are the etcd key prefixes whose live values this rule is
	// shown. Values under no rule's prefix are never decoded.
	Prefixes() []string
	// Apply decides about one live object under one of Prefixes.
	Apply(ctx context.Context, obj *state.Object) (Result, error)
}

// Preparer is implemented by rules that must see live state before the
// stream starts (to detect CIDRs, plan a mapping, or refuse up front).
type Preparer interface {
	Prepare(ctx context.Context, v *state.View) error
}

// Lister is implemented by rules whose Prepare lists prefixes through the
// View (View.List, Index.LiveKeysWithPrefix): the index records the keys
// under them by name, so listing them does not walk the whole bucket.
type Lister interface {
	Lists() []string
}

// Counter is implemented by rules whose Prepare counts the keys under
// prefixes it does not list (View.Count): the index counts them in its one
// pass, without recording them.
type Counter interface {
	Counts() []string
}

// Tolerant is implemented by rules that can do without some of the values
// they claim. When a claimed value cannot be decrypted here (KMS, or no
// EncryptionConfiguration), the engine asks every rule that claims it: if
// all are Tolerant and say yes, the value is copied as stored and the run
// goes on; otherwise it stops with the decryption error. A rule that
// tolerates a value must say so in its Notes (and what to do about it).
type Tolerant interface {
	Unreadable(key string, err error) bool
}

// Finisher is implemented by rules that create keys after the stream.
type Finisher interface {
	Finish(ctx context.Context) ([]NewObject, error)
}

// Noter is implemented by rules that have something to tell the operator
// after the run (exemptions, manual steps). Notes never hold Secret data.
type Noter interface {
	Notes() []string
}

// Observer sees every value the output will hold, after the rules: the
// stored bytes of kept keys, the new bytes (before encryption) of replaced
// and created ones.
// It must not keep key or value beyond the call. Observers run on a
// goroutine of their own, one value at a time in stream order, while the
// stream goes on; they cannot change anything, and must not share state
// with the rules without a lock (they may read what Prepare computed).
type Observer interface {
	Observe(key, value []byte, changed bool)
}

// PrefixAware is implemented by observers that need to know where the
// input keeps its objects (--etcd-prefix): Observe names every value by
// its canonical key, but a value encrypted at rest is bound to its stored
// key (state.Stored). Run calls it before the stream.
type PrefixAware interface {
	SetEtcdPrefix(prefix string)
}

// Package transform is snapshift's engine: it streams the live keys of a
// snapshot through rules and writes a new snapshot.
//
// A rule claims key prefixes. Keys no rule claims are copied byte for byte
// and never decoded. A claimed value is decoded once, shown to every rule
// that claims it (in registry order), and re-encoded only if a rule changed
// it, after a check that the stored bytes round-trip exactly through this
// build's codec. Unchanged objects keep their revisions; every replaced or
// created object is written as a new revision above the input's current
// revision; deleted keys are simply absent. The output is marked compacted
// above the highest revision written, so no client can read or watch the
// history that was dropped (see DESIGN.md decisions 2 and 3, docs/ARCHITECTURE.md).
package transform

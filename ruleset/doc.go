// Package ruleset is the user's declarative rules file (docs/RULES.md):
// its format and validation, which objects a rule matches, and what it does
// to an object's JSON form (map addresses, RFC 6902 JSON Patch, RFC 7386
// merge patch). It knows nothing of etcd or the engine: package rules runs
// a rule set in a transform, package verify checks its invariants.
package ruleset

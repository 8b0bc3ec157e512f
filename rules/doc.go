// Package rules holds snapshift's rules, one file each, and the registry
// (registry.go) that builds them from Options in a fixed order.
//
// The network rules share one Plan: service-cidr and pod-cidr compute it in
// Prepare (before any key is written, so every refusal comes first), and
// cluster-config reads it to move the CIDR copies in ConfigMaps with the
// objects.
package rules

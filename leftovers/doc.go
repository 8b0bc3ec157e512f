// Package leftovers holds the scans that run beside the rules over every
// output value: addresses of the old ranges that no rule moves (Pods,
// Endpoints, annotations, other ConfigMaps, custom resources, Helm
// releases), and a moved control-plane node's old address. They are
// reports, not rules: an operator rehearsing on a copy sees what the rules
// did not cover.
package leftovers

// Package state is the live Kubernetes state held in an etcd snapshot, read
// only: a View that decodes (and decrypts) live objects by key or prefix, the
// Object a rule is shown, the apiserver's well-known key layout (keys.go), and
// what the cluster records about its networks (networks.go).
//
// It sits below the transform engine: inspect, verify and the rules read a
// snapshot through it without importing the engine.
package state

package bundle

import (
	"fmt"
	"slices"

	"github.com/snapshift/snapshift/cni"
)

// CNIHostState is the host network state a CNI leaves on a node that holds
// the old pod range (package cni's HostState: agents to stop, interfaces
// with old-range addresses, routes to the old blocks, files it reads back
// at start). `snapshift node apply` removes it on the control-plane nodes
// (executing Actions); the runbook gives the same actions as shell
// commands for the workers (Commands).
type CNIHostState cni.HostState

// CNIHostStateOf is the host state of a CNI by state.DetectCNI's name,
// from package cni's table (its sources are named there); false for a name
// the table lacks or a CNI that leaves nothing to clean.
func CNIHostStateOf(name string) (CNIHostState, bool) {
	c, ok := cni.Lookup(name)
	if !ok || c.HostState.Empty() {
		return CNIHostState{}, false
	}
	return CNIHostState(c.HostState), true
}

// KnownCNIs are the CNIs whose host state the table knows, sorted.
func KnownCNIs() []string {
	var out []string
	for _, c := range cni.All() {
		if !c.HostState.Empty() {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// CNIActionKind is what one cleanup action does.
type CNIActionKind int

// The cleanup actions, in the order Actions lists them.
const (
	// StopAgent stops the running containers named Arg (crictl).
	StopAgent CNIActionKind = iota
	// DeleteLink deletes interface Arg if it exists.
	DeleteLink
	// FlushAddresses flushes interface Arg's addresses if it exists.
	FlushAddresses
	// FlushRoutes flushes the routes of protocol Arg.
	FlushRoutes
	// RemovePath removes host path Arg (and everything under it).
	RemovePath
)

// CNIAction is one step of a CNI host-state cleanup; each is safe when
// there is nothing to remove.
type CNIAction struct {
	Kind CNIActionKind
	Arg  string
}

// Actions are the steps that remove the state, in order.
func (s CNIHostState) Actions() []CNIAction {
	var out []CNIAction
	add := func(k CNIActionKind, args []string) {
		for _, a := range args {
			out = append(out, CNIAction{Kind: k, Arg: a})
		}
	}
	add(StopAgent, s.Agents)
	add(DeleteLink, s.Links)
	add(FlushAddresses, s.Flush)
	add(FlushRoutes, s.RouteProtos)
	add(RemovePath, s.Paths)
	return out
}

// Shell is the action as a shell command (what the runbook prints).
func (a CNIAction) Shell() string {
	switch a.Kind {
	case StopAgent:
		return fmt.Sprintf("crictl ps -q --name '^%s$' | xargs -r crictl --timeout 60s stop", a.Arg)
	case DeleteLink:
		return fmt.Sprintf("ip link show %s >/dev/null 2>&1 && ip link delete %s", a.Arg, a.Arg)
	case FlushAddresses:
		return fmt.Sprintf("ip link show %s >/dev/null 2>&1 && ip addr flush dev %s", a.Arg, a.Arg)
	case FlushRoutes:
		return "ip route flush proto " + a.Arg
	default:
		return "rm -rf " + a.Arg
	}
}

// Commands are the shell commands of Actions, in order.
func (s CNIHostState) Commands() []string {
	var out []string
	for _, a := range s.Actions() {
		out = append(out, a.Shell())
	}
	return out
}

package rules

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/transform"
)

// Options select and configure the rules. Each rule's options are a
// fragment declared in the rule's own file and embedded here; the zero value
// selects no rule. The fragments' JSON names are the keys of a rebuild
// file's networking section.
type Options struct {
	ServiceCIDROptions
	PodCIDROptions
	SATokensOptions
	ClusterInfoOptions
	ControlPlaneOptions
	UserRulesOptions
	CNIOptions
	WebhooksOptions
	// RecordedNodesOnly refuses a --control-plane-address for a node the
	// snapshot does not record (a misspelt name on the command line)
	// instead of noting it as a new node. The CLI sets it; a rebuild,
	// whose members may be new nodes, does not.
	RecordedNodesOnly bool `json:"-"`
}

// registry lists every rule, in the order they run when no prerequisite
// says otherwise. Adding a rule: its file (the rule, its options fragment
// embedded in Options, its Entry) and one line here.
var registry = []Entry{
	serviceCIDREntry,
	podCIDREntry,
	clusterConfigEntry,
	ciliumEntry,
	nodeLocalDNSEntry,
	calicoEntry,
	helmChartValuesEntry, // k3s and RKE2: helm_chart_values.go, k3s_*.go
	k3sAppliedEntry,
	k3sNodeArgsEntry,
	cniEntry, // after the CNI rules: it refuses the IPAM state none of them moves
	saTokensEntry,
	clusterInfoEntry,
	controlPlaneEntry,
	webhooksEntry,
	userRulesEntry, // last: user rules edit on top of the built-in rules' result
}

// Entry is one registered rule: everything the CLI, the rebuild
// configuration, the plan and the tests need to know about it.
type Entry struct {
	// Name is unique, e.g. "service-cidr".
	Name string
	// Summary says in one line what the rule does; Touches lists what it
	// edits (resources or keys), for `snapshift rules`.
	Summary string
	Touches []string
	// Options describes the rule's options, bound to o's fields.
	Options func(o *Options) []Option
	// After names rules whose Prepare must run before this one's (when
	// they run at all): their plans are this rule's input.
	After []string
	// Enabled reports whether the options turn the rule on.
	Enabled func(o *Options) bool
	// Validate checks the rule's options on their own, before the snapshot
	// is read, whether or not the rule is enabled (an option of a rule that
	// is off is a mistake too). Optional.
	Validate func(o *Options) error
	// New builds the rule for one run; the rules of a run share plan.
	New func(o Options, plan *Plan) transform.Rule
	// Example returns options that turn the rule on (the conformance suite
	// runs every rule with them; `snapshift rules` shows them).
	Example func() Options
}

// Option is one option of a rule. Field is what option.Error names; the
// CLI shows it as --Name, a rebuild file as Config, a golden case as Name.
type Option struct {
	// Field is the Go field in Options, e.g. "ServiceCIDR".
	Field string
	// Name is the option's kebab-case name, e.g. "service-cidr".
	Name string
	// CLI is true when Name is a flag of plan and transform (Value is then
	// a *string, *bool or *[]string). Options the rebuild command sets
	// itself (a new CA) are not flags.
	CLI bool
	// Verify is true when verify takes the option too: it states an
	// invariant of the output (the new ranges, the kept Services).
	Verify bool
	// Config is the path in a rebuild file, e.g. "networking.serviceSubnet";
	// empty when a rebuild file does not set it directly.
	Config string
	// Usage is the help text; Default the value an empty option takes.
	Usage   string
	Default string
	// Value points into Options: *string, *bool, *[]string, *[]byte or
	// **BootstrapToken.
	Value any
}

// Set sets the option from text: a list option appends, a bool parses
// "true"/"false", a bootstrap token parses "<id>.<secret>".
func (o Option) Set(s string) error {
	switch v := o.Value.(type) {
	case *string:
		*v = s
	case *bool:
		switch s {
		case "true":
			*v = true
		case "false":
			*v = false
		default:
			return option.Errorf(o.Field, "{} takes true or false, not %q", s)
		}
	case *[]string:
		*v = append(*v, s)
	case *[]byte:
		*v = []byte(s)
	case **BootstrapToken:
		t, err := ParseBootstrapToken(s)
		if err != nil {
			return option.Errorf(o.Field, "{}: %w", err)
		}
		*v = t
	default:
		return fmt.Errorf("option %s: unsupported value type %T", o.Field, o.Value)
	}
	return nil
}

// Registry returns every registered rule, in registry order.
func Registry() []Entry { return slices.Clone(registry) }

// Names lists every rule's name, in registry order.
func Names() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.Name
	}
	return out
}

// Lookup returns a registered rule or an error listing the valid names.
func Lookup(name string) (Entry, error) {
	for _, e := range registry {
		if e.Name == name {
			return e, nil
		}
	}
	names := Names()
	sort.Strings(names)
	return Entry{}, fmt.Errorf("unknown rule %q (rules: %s)", name, strings.Join(names, ", "))
}

// AllOptions lists every rule's options, bound to o, in registry order.
func AllOptions(o *Options) []Option {
	var out []Option
	for _, e := range registry {
		out = append(out, e.Options(o)...)
	}
	return out
}

// OptionByField finds the option whose Go field is field.
func OptionByField(field string) (Option, bool) {
	var scratch Options
	for _, opt := range AllOptions(&scratch) {
		if opt.Field == field {
			return opt, true
		}
	}
	return Option{}, false
}

// Build returns the rules Options select, in dependency order, and the plan
// they share.
func Build(o Options) ([]transform.Rule, *Plan, error) {
	defaults(&o)
	if err := validate(&o); err != nil {
		return nil, nil, err
	}
	var on []Entry
	for _, e := range registry {
		if e.Enabled(&o) {
			on = append(on, e)
		}
	}
	ordered, err := Order(on)
	if err != nil {
		return nil, nil, err
	}
	plan := &Plan{}
	out := make([]transform.Rule, len(ordered))
	for i, e := range ordered {
		out[i] = e.New(o, plan)
		if l, ok := out[i].(interface{ setEarlier([]transform.Rule) }); ok {
			l.setEarlier(out[:i]) // to name a rule that changed a field first
		}
	}
	return out, plan, nil
}

// Selected names the rules o turns on, in registry order, after checking
// the options as Build does.
func Selected(o Options) ([]string, error) {
	defaults(&o)
	if err := validate(&o); err != nil {
		return nil, err
	}
	var on []string
	for _, e := range registry {
		if e.Enabled(&o) {
			on = append(on, e.Name)
		}
	}
	return on, nil
}

// Validate checks the options on their own, as Build does, without
// building the rules: errors are *option.Error values naming the field.
func Validate(o Options) error {
	defaults(&o)
	return validate(&o)
}

// defaults gives every empty string option its Default.
func defaults(o *Options) {
	for _, opt := range AllOptions(o) {
		if s, ok := opt.Value.(*string); ok && *s == "" && opt.Default != "" {
			*s = opt.Default
		}
	}
}

func validate(o *Options) error {
	for _, e := range registry {
		if e.Validate != nil {
			if err := e.Validate(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// Order sorts entries so that every rule comes after the rules it names in
// After (those among entries), keeping the given order otherwise. A cycle
// is an error naming the rules in it.
func Order(entries []Entry) ([]Entry, error) {
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name] = true
	}
	done := map[string]bool{}
	var out []Entry
	for len(out) < len(entries) {
		progressed := false
		for _, e := range entries {
			if done[e.Name] || !ready(e, present, done) {
				continue
			}
			out, done[e.Name], progressed = append(out, e), true, true
			break // restart from the front: the given order decides ties
		}
		if !progressed {
			var stuck []string
			for _, e := range entries {
				if !done[e.Name] {
					stuck = append(stuck, e.Name)
				}
			}
			return nil, fmt.Errorf("the rules %s wait for each other (a cycle in their prerequisites)", strings.Join(stuck, ", "))
		}
	}
	return out, nil
}

func ready(e Entry, present, done map[string]bool) bool {
	for _, a := range e.After {
		if present[a] && !done[a] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// FlagName renders an option as the CLI names it ("--service-cidr"); a
// field that is no flag keeps its Go name.
func FlagName(field string) string {
	if o, ok := OptionByField(field); ok && o.CLI {
		return "--" + o.Name
	}
	return field
}

// ConfigPath renders an option as a rebuild file names it
// ("networking.serviceSubnet"); a field with no key there keeps its Go name.
func ConfigPath(field string) string {
	if o, ok := OptionByField(field); ok && o.Config != "" {
		return o.Config
	}
	return field
}

// rangeFollower completes the entry of a rule that edits copies of the
// ranges with the mappings the service-cidr and pod-cidr rules planned: it
// runs after both (their plans are its input), is on when either range
// moves, and has no options of its own.
func rangeFollower(e Entry) Entry {
	e.After = []string{NameServiceCIDR, NamePodCIDR}
	e.Enabled = func(o *Options) bool { return o.ServiceCIDR != "" || o.PodNetworkCIDR != "" }
	e.Example = func() Options {
		return Options{ServiceCIDROptions: ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}
	}
	e.Options = func(*Options) []Option { return nil }
	return e
}

package ruleset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/internal/strictyaml"
)

// APIVersion and Kind of a rules file.
const (
	APIVersion = "snapshift.io/v1alpha1"
	Kind       = "RuleSet"
)

// ErrInvalid is wrapped by every error about a rules file's content.
var ErrInvalid = errors.New("invalid rules file")

// File is one rules file.
type File struct {
	APIVersion string       `yaml:"apiVersion"`
	Kind       string       `yaml:"kind"`
	AddressMap []AddressMap `yaml:"addressMap"`
	Rules      []*Rule      `yaml:"rules"`

	// Path is where the file was read from.
	Path string `yaml:"-"`
}

// AddressMap is one extra mapping: every address in From moves to the same
// offset in To.
type AddressMap struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`

	from, to netip.Prefix
}

// Rule is one user rule.
type Rule struct {
	Name         string   `yaml:"name"`
	Match        Match    `yaml:"match"`
	MapAddresses []string `yaml:"mapAddresses"`
	Patch        []any    `yaml:"patch"`
	MergePatch   any      `yaml:"mergePatch"`
	Delete       bool     `yaml:"delete"`
	Optional     bool     `yaml:"optional"`
	// Replace are text replacements (replace.go), run after mapAddresses.
	Replace []TextReplace `yaml:"replace"`
	// Expect, when given, makes a rule that does too little an error.
	Expect *Expect `yaml:"expect"`
	// EditStatus lets the rule change a built-in object's status.
	EditStatus bool `yaml:"editStatus"`

	// File is the file the rule comes from; Line its line there.
	File string `yaml:"-"`
	Line int    `yaml:"-"`

	selector  labels.Selector
	patchJSON []byte // the RFC 6902 patch document
	patchPats bool   // a test or replace op's path is a pattern
	mergeJSON []byte // the RFC 7386 merge patch, nil if none
}

// Match selects objects; every condition given must hold.
type Match struct {
	// Resource is a resource as kubectl names it: plural[.group] as
	// `kubectl api-resources` prints it ("configmaps", "deployments.apps",
	// "ipaddresspools.metallb.io"), a built-in one also singular, without
	// its group or by its short name ("deploy", "svc"), or "workloads":
	// every resource whose objects hold a pod spec.
	Resource      string      `yaml:"resource"`
	Namespaces    []string    `yaml:"namespaces"`
	Names         []string    `yaml:"names"`
	LabelSelector string      `yaml:"labelSelector"`
	Where         []Condition `yaml:"where"`

	names  []string // Resource as api-resources names, one per resource
	stored []string // the same as the etcd keys name them
}

// Condition holds when the value at Path equals Equals.
type Condition struct {
	Path   string `yaml:"path"`
	Equals any    `yaml:"equals"`
}

// String names the rule for messages: `rule "x" (rules.yaml:12)`.
func (r *Rule) String() string { return fmt.Sprintf("rule %q (%s:%d)", r.Name, r.File, r.Line) }

// Load reads and validates rules files, in order. Rule names must be
// unique across them.
func Load(paths []string) ([]*File, error) {
	var out []*File
	seen := map[string]*Rule{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rules file %s does not exist", p)
		}
		if err != nil {
			return nil, fmt.Errorf("rules file: %w", err)
		}
		f, err := Parse(p, b)
		if err != nil {
			return nil, err
		}
		for _, r := range f.Rules {
			if o, ok := seen[r.Name]; ok {
				return nil, fmt.Errorf("%w: %s:%d: rule name %q is used twice (also at %s:%d)", ErrInvalid, r.File, r.Line, r.Name, o.File, o.Line)
			}
			seen[r.Name] = r
		}
		out = append(out, f)
	}
	if err := checkMaps(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Parse decodes and validates one rules file (strictly: an unknown key is
// an error with its line).
func Parse(name string, b []byte) (*File, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(b, &node); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, name, tidy(err))
	}
	if k := strictyaml.Kind(b); k == "RebuildConfiguration" {
		return nil, fmt.Errorf("%w: %s is a RebuildConfiguration: give it to snapshift rebuild --config", ErrInvalid, name)
	}
	f := &File{Path: name}
	if err := strictyaml.Check(b, f, "yaml"); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, name, tidy(err))
	}
	lines := ruleLines(&node)
	for i, r := range f.Rules {
		if r == nil {
			return nil, fmt.Errorf("%w: %s: rules[%d] is empty", ErrInvalid, name, i)
		}
		r.File = name
		if i < len(lines) {
			r.Line = lines[i]
		}
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return f, nil
}

// tidy makes a YAML error one line, in the file's words (parseerr): "line 7:
// not valid YAML: ...", not yaml.v3's "yaml: line 7: ...".
func tidy(err error) string {
	s := parseerr.Message(err)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// ruleLines returns the line of each item of the top-level rules list.
func ruleLines(doc *yaml.Node) []int {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "rules" {
			var out []int
			for _, item := range m.Content[i+1].Content {
				out = append(out, item.Line)
			}
			return out
		}
	}
	return nil
}

var (
	ruleName     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	resourceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

func (f *File) validate() error {
	if h := strictyaml.Header(f.APIVersion, f.Kind, APIVersion, Kind); h != "" {
		return fmt.Errorf("%s: %s", f.Path, h)
	}
	if len(f.Rules) == 0 && len(f.AddressMap) == 0 {
		return fmt.Errorf("%s: the file has no rules and no addressMap", f.Path)
	}
	for i := range f.AddressMap {
		if err := f.AddressMap[i].parse(); err != nil {
			return fmt.Errorf("%s: addressMap[%d]: %w", f.Path, i, err)
		}
	}
	for _, r := range f.Rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("%s:%d: rule %q: %w", r.File, r.Line, r.Name, err)
		}
	}
	return nil
}

func (a *AddressMap) parse() error {
	var err error
	if a.from, err = cidr.Parse(a.From); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if a.to, err = cidr.Parse(a.To); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	switch {
	case !cidr.SameFamily(a.from, a.to):
		return fmt.Errorf("%s is %s and %s is %s: a mapping must stay within one family", a.from, cidr.Family(a.from), a.to, cidr.Family(a.to))
	case a.to.Bits() > a.from.Bits():
		return fmt.Errorf("%s is smaller than %s: every offset must fit, so the new range must be at least as large", a.to, a.from)
	case a.from.Overlaps(a.to):
		return fmt.Errorf("%s and %s overlap: an address could be moved twice", a.from, a.to)
	}
	return nil
}

// checkMaps refuses addressMap entries whose old ranges overlap: which one
// moves an address would be ambiguous.
func checkMaps(files []*File) error {
	var all []AddressMap
	var where []string
	for _, f := range files {
		for i, a := range f.AddressMap {
			for j, b := range all {
				if a.from.Overlaps(b.from) {
					return fmt.Errorf("%w: %s: addressMap[%d] from %s overlaps %s (%s): which one moves an address would be ambiguous", ErrInvalid, f.Path, i, a.from, b.from, where[j])
				}
			}
			all, where = append(all, a), append(where, f.Path)
		}
	}
	return nil
}

// Ranges returns the files' address maps as ranges.
func Ranges(files []*File) []Range {
	var out []Range
	for _, f := range files {
		for _, a := range f.AddressMap {
			out = append(out, Range{Old: a.from, New: a.to, Source: "addressMap of " + f.Path})
		}
	}
	return out
}

func (r *Rule) validate() error {
	if !ruleName.MatchString(r.Name) {
		return fmt.Errorf("name must be lowercase letters, digits, '-' and '.' (got %q)", r.Name)
	}
	if err := r.Match.validate(); err != nil {
		return err
	}
	for _, p := range r.MapAddresses {
		if err := checkPattern(p); err != nil || p == "" {
			return fmt.Errorf("mapAddresses: %s", pointerProblem(p, err))
		}
	}
	for i := range r.Replace {
		if err := r.Replace[i].compile(); err != nil {
			return fmt.Errorf("replace[%d]: %w", i, err)
		}
	}
	if r.Expect != nil && r.Expect.Min < 0 {
		return fmt.Errorf("expect.min must be 0 or more (got %d)", r.Expect.Min)
	}
	edits := len(r.MapAddresses) > 0 || len(r.Replace) > 0 || len(r.Patch) > 0 || r.MergePatch != nil
	if !edits && !r.Delete {
		return errors.New("it does nothing: give mapAddresses, replace, patch, mergePatch or delete")
	}
	if r.Delete && edits {
		return errors.New("delete: true removes the object, so mapAddresses, replace, patch and mergePatch make no sense with it")
	}
	if sel, err := labels.Parse(r.Match.LabelSelector); err != nil {
		return fmt.Errorf("match.labelSelector %q: %v", r.Match.LabelSelector, err)
	} else {
		r.selector = sel
	}
	if err := r.compilePatches(); err != nil {
		return err
	}
	return nil
}

func pointerProblem(p string, err error) string {
	if err == nil {
		return fmt.Sprintf("%q points at the whole object; name a field", p)
	}
	return err.Error()
}

var patchOps = map[string]bool{"add": true, "remove": true, "replace": true, "move": true, "copy": true, "test": true}

// compilePatches checks the JSON Patch operations and keeps both patches
// as JSON.
func (r *Rule) compilePatches() error {
	for i, raw := range r.Patch {
		op, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("patch[%d] is not an operation ({op, path, ...})", i)
		}
		name, _ := op["op"].(string)
		if !patchOps[name] {
			return fmt.Errorf("patch[%d]: op %q is not one of add, remove, replace, move, copy, test", i, op["op"])
		}
		p, ok := op["path"].(string)
		if err := checkPattern(p); !ok || err != nil {
			return fmt.Errorf("patch[%d]: path: %s", i, pointerProblemOr(p, ok, err))
		}
		if IsPattern(p) {
			if name != "test" && name != "replace" {
				return fmt.Errorf("patch[%d]: path %q: wildcards and aliases work in test and replace ops only (the places an %s would touch must exist already)", i, p, name)
			}
			r.patchPats = true
		}
		if name == "move" || name == "copy" {
			from, ok := op["from"].(string)
			if err := checkPointer(from); !ok || err != nil {
				return fmt.Errorf("patch[%d]: from: %s", i, pointerProblemOr(from, ok, err))
			}
		}
		if _, has := op["value"]; !has && (name == "add" || name == "replace" || name == "test") {
			return fmt.Errorf("patch[%d]: op %s needs a value", i, name)
		}
		for k := range op {
			if k != "op" && k != "path" && k != "from" && k != "value" {
				return fmt.Errorf("patch[%d]: unknown key %q", i, k)
			}
		}
	}
	var err error
	if len(r.Patch) > 0 {
		if r.patchJSON, err = json.Marshal(r.Patch); err != nil {
			return fmt.Errorf("patch: %w", err)
		}
	}
	if r.MergePatch != nil {
		if _, ok := r.MergePatch.(map[string]any); !ok {
			return errors.New("mergePatch must be an object")
		}
		if r.mergeJSON, err = json.Marshal(r.MergePatch); err != nil {
			return fmt.Errorf("mergePatch: %w", err)
		}
	}
	return nil
}

func pointerProblemOr(p string, ok bool, err error) string {
	if !ok {
		return "a string JSON pointer is required"
	}
	return err.Error()
}

func (m *Match) validate() error {
	if m.Resource == "" {
		return errors.New("match.resource is required (a resource as kubectl api-resources names it, e.g. configmaps, deployments.apps, ipaddresspools.metallb.io, or workloads)")
	}
	if !resourceName.MatchString(m.Resource) {
		return fmt.Errorf("match.resource %q is not plural[.group] in lowercase", m.Resource)
	}
	if err := m.resolve(); err != nil {
		return err
	}
	for _, g := range append(append([]string(nil), m.Namespaces...), m.Names...) {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("match: bad glob %q", g)
		}
	}
	for i, c := range m.Where {
		if err := checkPattern(c.Path); err != nil {
			return fmt.Errorf("match.where[%d].path: %w", i, err)
		}
	}
	return nil
}

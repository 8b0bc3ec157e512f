package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/yamledit"
)

// RenderMethod says how a manifest's text was made.
type RenderMethod string

// Render methods.
const (
	// RenderOriginal: the Pod is unchanged; the original bytes.
	RenderOriginal RenderMethod = "original"
	// RenderEdited: the original text with only the changed values
	// replaced and added entries inserted.
	RenderEdited RenderMethod = "edited"
	// RenderMarshalled: the typed Pod marshalled as kubeadm does.
	RenderMarshalled RenderMethod = "marshalled"
)

// Rendering is a manifest's text as WriteWith writes it.
type Rendering struct {
	Data   []byte       `json:"-"`
	Method RenderMethod `json:"method"`
	// Reason says why a manifest that was read had to be marshalled.
	Reason string `json:"reason,omitempty"`
}

// Render returns the manifest's text: the original bytes when the Pod is
// unchanged; the original text edited in place when it was read; the
// marshalled Pod when it was generated, or when the in-place edit is not
// possible (then Reason says why). A manifest with fields this k8s.io/api
// does not know is never marshalled (that would drop them): Render fails
// instead.
func (m *Manifest) Render() (Rendering, error) {
	if m.Pod == nil {
		return Rendering{}, fmt.Errorf("%s: no Pod", m.Component)
	}
	if m.Original == nil {
		data, err := MarshalPod(m.Pod)
		return Rendering{Data: data, Method: RenderMarshalled}, err
	}
	orig := m.orig
	if orig == nil {
		var err error
		if orig, _, err = decodePod(m.Original); err != nil {
			return Rendering{}, fmt.Errorf("%s: original: %w", m.Component, err)
		}
	}
	if apiequality.Semantic.DeepEqual(orig, m.Pod) {
		return Rendering{Data: bytes.Clone(m.Original), Method: RenderOriginal}, nil
	}
	data, err := editInPlace(m.Original, orig, m.Pod)
	if err == nil {
		return Rendering{Data: data, Method: RenderEdited}, nil
	}
	if m.lossy {
		return Rendering{}, fmt.Errorf("%s: cannot edit the manifest in place (%v), and marshalling it would drop the fields k8s.io/api does not know", m.Component, err)
	}
	data, merr := MarshalPod(m.Pod)
	if merr != nil {
		return Rendering{}, merr
	}
	return Rendering{Data: data, Method: RenderMarshalled, Reason: err.Error()}, nil
}

// MarshalPod writes pod as kubeadm's MarshalToYaml does (JSON field names,
// keys sorted, apiVersion v1 and kind Pod).
func MarshalPod(pod *corev1.Pod) ([]byte, error) {
	p := pod.DeepCopy()
	p.APIVersion, p.Kind = "v1", "Pod"
	data, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("marshalling Pod %s: %w", p.Name, err)
	}
	return data, nil
}

// errNoEdit is wrapped when the text cannot be edited in place.
var errNoEdit = errors.New("cannot edit in place")

func noEdit(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNoEdit, fmt.Sprintf(format, args...))
}

// editInPlace applies the difference between old and new (both typed Pods
// decoded from or derived from src) to the text src: changed scalars are
// replaced where they stand, in their quoting style; items appended to a
// list and keys added to a mapping are inserted as lines after the last
// entry. The result must decode to exactly new.
func editInPlace(src []byte, old, new *corev1.Pod) ([]byte, error) {
	a, err := generic(old)
	if err != nil {
		return nil, err
	}
	b, err := generic(new)
	if err != nil {
		return nil, err
	}
	var ops []op
	if err := diff(nil, a, b, &ops); err != nil {
		return nil, err
	}
	t, doc, err := yamledit.Parse(src)
	if err != nil {
		return nil, noEdit("%v", err)
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 {
		return nil, noEdit("not a single YAML document")
	}
	for _, o := range ops {
		if err := apply(t, doc.Content[0], o); err != nil {
			return nil, err
		}
	}
	out := t.Bytes()
	got, _, err := decodePod(out)
	if err != nil {
		return nil, noEdit("the edited text does not decode: %v", err)
	}
	if !apiequality.Semantic.DeepEqual(got, new) {
		return nil, noEdit("the edited text does not decode to the updated Pod")
	}
	return out, nil
}

// generic is the Pod as JSON values (maps, slices, strings, json.Number,
// bools, nil), keyed as in the manifest.
func generic(pod *corev1.Pod) (any, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err = dec.Decode(&v)
	return v, err
}

type opKind int

const (
	opSet    opKind = iota // replace the scalar at path with value
	opAppend               // append values to the sequence at path
	opAddKey               // add key: value to the mapping at path
)

type op struct {
	kind   opKind
	path   []any // string keys and int indexes
	key    string
	value  any
	values []any
}

func pathString(path []any) string {
	var sb strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			sb.WriteString("." + p)
		case int:
			fmt.Fprintf(&sb, "[%d]", p)
		}
	}
	return sb.String()
}

func extend(path []any, step any) []any {
	return append(append([]any(nil), path...), step)
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// diff lists the operations that turn a into b. Removals and type changes
// are not edits Update makes: they are refused.
func diff(path []any, a, b any, ops *[]op) error {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return noEdit("%s changes type", pathString(path))
		}
		for _, k := range sortedKeys(av) {
			bval, ok := bv[k]
			if !ok {
				return noEdit("%s.%s is removed", pathString(path), k)
			}
			if err := diff(extend(path, k), av[k], bval, ops); err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(bv) {
			if _, ok := av[k]; !ok {
				*ops = append(*ops, op{kind: opAddKey, path: path, key: k, value: bv[k]})
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return noEdit("%s changes type", pathString(path))
		}
		if len(bv) < len(av) {
			return noEdit("%s loses items", pathString(path))
		}
		for i := range av {
			if err := diff(extend(path, i), av[i], bv[i], ops); err != nil {
				return err
			}
		}
		if len(bv) > len(av) {
			for _, v := range bv[len(av):] {
				if !isScalar(v) {
					return noEdit("%s gains a non-scalar item", pathString(path))
				}
			}
			*ops = append(*ops, op{kind: opAppend, path: path, values: bv[len(av):]})
		}
	default:
		if !isScalar(b) {
			return noEdit("%s changes type", pathString(path))
		}
		if a != b {
			*ops = append(*ops, op{kind: opSet, path: path, value: b})
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func apply(t *yamledit.Text, root *yamlv3.Node, o op) error {
	n, err := walk(root, o.path)
	if err != nil {
		return err
	}
	switch o.kind {
	case opSet:
		return set(t, n, o)
	case opAppend:
		return appendItems(t, n, o)
	default:
		return addKey(t, n, o)
	}
}

// walk follows path from n.
func walk(n *yamlv3.Node, path []any) (*yamlv3.Node, error) {
	for i, step := range path {
		if n.Kind == yamlv3.AliasNode || n.Anchor != "" {
			return nil, noEdit("%s uses a YAML anchor or alias", pathString(path[:i]))
		}
		switch step := step.(type) {
		case string:
			if n.Kind != yamlv3.MappingNode {
				return nil, noEdit("%s is not a mapping", pathString(path[:i]))
			}
			var next *yamlv3.Node
			for j := 0; j+1 < len(n.Content); j += 2 {
				if k := n.Content[j]; k.Value == "<<" {
					return nil, noEdit("%s uses a YAML merge key", pathString(path[:i]))
				} else if k.Kind == yamlv3.ScalarNode && k.Value == step {
					next = n.Content[j+1]
				}
			}
			if next == nil {
				return nil, noEdit("%s is not in the text", pathString(path[:i+1]))
			}
			n = next
		case int:
			if n.Kind != yamlv3.SequenceNode || step >= len(n.Content) {
				return nil, noEdit("%s is not in the text", pathString(path[:i+1]))
			}
			n = n.Content[step]
		}
	}
	if n.Kind == yamlv3.AliasNode || n.Anchor != "" {
		return nil, noEdit("%s uses a YAML anchor or alias", pathString(path))
	}
	return n, nil
}

// set replaces the scalar n, keeping its quoting style.
func set(t *yamledit.Text, n *yamlv3.Node, o op) error {
	where := pathString(o.path)
	if n.Kind != yamlv3.ScalarNode {
		return noEdit("%s is not a scalar in the text", where)
	}
	var err error
	if v, ok := o.value.(string); ok {
		err = t.SetScalar(n, v)
	} else {
		var repl string
		if repl, err = scalarText(o.value, n.Style); err == nil {
			err = t.ReplaceScalar(n, repl)
		}
	}
	if err != nil {
		return noEdit("%s: %v", where, err)
	}
	return nil
}

// appendItems inserts items after the last item of the block sequence n,
// with the same indentation and dash.
func appendItems(t *yamledit.Text, n *yamlv3.Node, o op) error {
	where := pathString(o.path)
	if n.Kind != yamlv3.SequenceNode || n.Style&yamlv3.FlowStyle != 0 || len(n.Content) == 0 {
		return noEdit("%s is not a non-empty block sequence in the text", where)
	}
	last := n.Content[len(n.Content)-1]
	if last.Kind != yamlv3.ScalarNode || strings.Contains(last.Value, "\n") || last.Style&(yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
		return noEdit("%s: its last item is not a one-line scalar", where)
	}
	prefix, err := t.Prefix(last)
	if err != nil {
		return noEdit("%v", err)
	}
	if strings.TrimSpace(prefix) != "-" || !strings.HasSuffix(prefix, " ") {
		return noEdit("%s: item on line %d does not start its own line", where, last.Line)
	}
	lines := make([]string, 0, len(o.values))
	for _, v := range o.values {
		s, err := scalarText(v, 0)
		if err != nil {
			return noEdit("%s: %v", where, err)
		}
		lines = append(lines, prefix+s)
	}
	if err := t.InsertLines(last.Line, lines...); err != nil {
		return noEdit("%v", err)
	}
	return nil
}

// addKey inserts "key: value" after the last entry of the block mapping n,
// at its indentation. value is a scalar or a mapping of scalars.
func addKey(t *yamledit.Text, n *yamlv3.Node, o op) error {
	where := pathString(extend(o.path, o.key))
	if n.Kind != yamlv3.MappingNode || n.Style&yamlv3.FlowStyle != 0 || len(n.Content) < 2 {
		return noEdit("%s: its parent is not a non-empty block mapping in the text", where)
	}
	lastKey := n.Content[len(n.Content)-2]
	end, err := endLine(n.Content[len(n.Content)-1])
	if err != nil {
		return noEdit("%s: %v", where, err)
	}
	indent, err := t.Prefix(lastKey)
	if err != nil {
		return noEdit("%v", err)
	}
	if strings.TrimSpace(indent) != "" {
		return noEdit("%s: the mapping's keys do not start their lines", where)
	}
	key, err := scalarText(o.key, 0)
	if err != nil {
		return noEdit("%s: %v", where, err)
	}
	var lines []string
	switch v := o.value.(type) {
	case map[string]any:
		if len(v) == 0 {
			lines = append(lines, indent+key+": {}")
			break
		}
		lines = append(lines, indent+key+":")
		for _, k := range sortedKeys(v) {
			if !isScalar(v[k]) {
				return noEdit("%s.%s is not a scalar", where, k)
			}
			ks, err := scalarText(k, 0)
			if err != nil {
				return noEdit("%s: %v", where, err)
			}
			vs, err := scalarText(v[k], 0)
			if err != nil {
				return noEdit("%s: %v", where, err)
			}
			lines = append(lines, indent+"  "+ks+": "+vs)
		}
	case []any:
		return noEdit("%s: adding a list", where)
	default:
		vs, err := scalarText(v, 0)
		if err != nil {
			return noEdit("%s: %v", where, err)
		}
		lines = append(lines, indent+key+": "+vs)
	}
	if err := t.InsertLines(end, lines...); err != nil {
		return noEdit("%v", err)
	}
	return nil
}

// endLine is the last line of node n (scalars must be one-line).
func endLine(n *yamlv3.Node) (int, error) {
	switch n.Kind {
	case yamlv3.ScalarNode:
		if strings.Contains(n.Value, "\n") || n.Style&(yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
			return 0, errors.New("the mapping ends with a multi-line scalar")
		}
		return n.Line, nil
	case yamlv3.MappingNode, yamlv3.SequenceNode:
		if n.Style&yamlv3.FlowStyle != 0 {
			return 0, errors.New("the mapping ends with a flow collection")
		}
		if len(n.Content) == 0 {
			return n.Line, nil
		}
		return endLine(n.Content[len(n.Content)-1])
	}
	return 0, errors.New("the mapping ends with an alias")
}

// scalarText writes v as a one-line YAML scalar for a block collection: a
// string as yamledit.Quote writes it in style (single or double quotes
// when the replaced scalar had them, else plain when that reads back as
// the same string, else double-quoted); numbers, booleans and null as JSON
// does.
func scalarText(v any, style yamlv3.Style) (string, error) {
	switch v := v.(type) {
	case string:
		return yamledit.Quote(v, style)
	case json.Number:
		return v.String(), nil
	case bool:
		if v {
			return "true", nil
		}
		return "false", nil
	case nil:
		return "null", nil
	}
	return "", fmt.Errorf("unsupported value %T", v)
}

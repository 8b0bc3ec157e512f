package yamledit

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// values lists the scalars of the document that are not in mapping keys,
// in document order; aliases are not followed.
func values(n *yaml.Node, out []*yaml.Node) []*yaml.Node {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = values(c, out)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			out = values(n.Content[i], out)
		}
	case yaml.ScalarNode:
		out = append(out, n)
	}
	return out
}

// FuzzSetScalar sets one value scalar of a document to a new string. When
// SetScalar accepts the edit, the text must still parse, that scalar must
// read back as the new string, every other scalar as before, and the
// bytes before and after the scalar's text must be unchanged.
func FuzzSetScalar(f *testing.F) {
	f.Add("a: b # c\n", uint(0), "x")
	f.Add("networking:\n  serviceSubnet: \"10.96.0.0/12\" # s\n  podSubnet: '10.244.0.0/16'\n", uint(1), "10.245.0.0/16")
	f.Add("ключ: [é, 10.0.0.0/8]\r\n# comment\r\nb: {c: d}\r\n", uint(1), "fd00::/108")
	f.Add(`{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`, uint(0), "a\"b\\c\n")
	f.Add("- a\n- 'b'\n- \"c\"\n", uint(2), "x, y: z # w")
	f.Add("[a, b]\n", uint(1), "c,d")
	f.Add("\ufeffa: b\rc: d\u2028e: é\n", uint(2), "\u0085")
	f.Fuzz(func(t *testing.T, doc string, pick uint, v string) {
		text, root, err := Parse([]byte(doc))
		if err != nil {
			return
		}
		before := values(root, nil)
		if len(before) == 0 {
			return
		}
		i := int(pick % uint(len(before)))
		n := before[i]
		start, end, err := text.token(n)
		if err != nil {
			return
		}
		if err := text.SetScalar(n, v); err != nil {
			return
		}
		out := string(text.Bytes())
		if out[:start] != doc[:start] || out[len(out)-(len(doc)-end):] != doc[end:] {
			t.Fatalf("bytes outside the scalar changed:\n%q\n%q", doc, out)
		}
		var again yaml.Node
		if err := yaml.Unmarshal([]byte(out), &again); err != nil {
			t.Fatalf("edited text does not parse: %v\n%q\n%q", err, doc, out)
		}
		after := values(&again, nil)
		if len(after) != len(before) {
			t.Fatalf("%d values became %d:\n%q\n%q", len(before), len(after), doc, out)
		}
		if tag := after[i].ShortTag(); tag != "!!str" {
			t.Fatalf("value %d reads as %s, not a string:\n%q\n%q", i, tag, doc, out)
		}
		for j := range after {
			want := before[j].Value
			if j == i {
				want = v
			}
			if after[j].Value != want {
				t.Fatalf("value %d reads %q, want %q:\n%q\n%q", j, after[j].Value, want, doc, out)
			}
		}
	})
}

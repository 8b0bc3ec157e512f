package yamledit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// find follows path (mapping keys and sequence indexes written as
// "[i]") from the document node.
func find(t *testing.T, root *yaml.Node, path ...string) *yaml.Node {
	t.Helper()
	n := root.Content[0]
	for _, step := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == step {
					next = n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if step == "["+string(rune('0'+i))+"]" {
					next = c
				}
			}
		}
		if next == nil {
			t.Fatalf("%v: no %q", path, step)
		}
		n = next
	}
	return n
}

func TestSetScalar(t *testing.T) {
	commented := "# head comment\r\n" +
		"apiVersion: v1 # trailing\r\n" +
		"networking:\r\n" +
		"  # the Service range\r\n" +
		"  serviceSubnet: \"10.96.0.0/12\"   # quoted\r\n" +
		"  podSubnet:   10.244.0.0/16\r\n" +
		"  dnsDomain: cluster.local\r\n" +
		"# foot comment\r\n"
	cases := []struct {
		name, doc string
		path      []string
		value     string
		want      string
	}{
		{"plain", "a: b # c\n", []string{"a"}, "x", "a: x # c\n"},
		{"multi-byte key before", "ключ: 10.96.0.0/12 # комментарий\n", []string{"ключ"}, "10.100.0.0/16", "ключ: 10.100.0.0/16 # комментарий\n"},
		{"multi-byte in flow", "{ä: 'é', ö: 10.0.0.0/8, ü: x}\n", []string{"ö"}, "10.1.0.0/16", "{ä: 'é', ö: 10.1.0.0/16, ü: x}\n"},
		{"multi-byte item", "- 日本語\n- [é, 10.0.0.0/8]\n", []string{"[1]", "[1]"}, "fd00::/108", "- 日本語\n- [é, fd00::/108]\n"},
		{"emoji in value before", "a: {x: \"😀\", y: '1'}\n", []string{"a", "y"}, "2", "a: {x: \"😀\", y: '2'}\n"},
		{"double-quoted", "a: \"10.96.0.0/12\"\n", []string{"a"}, "10.100.0.0/16", "a: \"10.100.0.0/16\"\n"},
		{"double-quoted escapes", "a: \"10.96.0.0\\u002f12\" # esc\n", []string{"a"}, "10.100.0.0/16", "a: \"10.100.0.0/16\" # esc\n"},
		{"double-quoted new escapes", "a: \"x\"\n", []string{"a"}, "say \"hi\"\t\\", "a: \"say \\\"hi\\\"\\t\\\\\"\n"},
		{"single-quoted", "a: 'it''s'\n", []string{"a"}, "it's not", "a: 'it''s not'\n"},
		{"single-quoted line break", "a: 'x'\n", []string{"a"}, "l1\nl2", "a: \"l1\\nl2\"\n"},
		{"plain that would not read back", "a: b\n", []string{"a"}, "true", "a: \"true\"\n"},
		{"plain with a colon", "- b\n", []string{"[0]"}, "x: y", "- \"x: y\"\n"},
		{"plain with a comma in flow", "[a, b]\n", []string{"[1]"}, "c,d", "[a, \"c,d\"]\n"},
		{"plain with a comma in block", "- a\n- b\n", []string{"[1]"}, "c,d", "- a\n- c,d\n"},
		{"JSON", `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`, []string{"Network"}, "10.245.0.0/16", `{"Network": "10.245.0.0/16", "Backend": {"Type": "vxlan"}}`},
		{"comments and CRLF", commented, []string{"networking", "serviceSubnet"}, "10.100.0.0/16", strings.Replace(commented, "10.96.0.0/12", "10.100.0.0/16", 1)},
		{"after a comment line", commented, []string{"networking", "podSubnet"}, "10.245.0.0/16", strings.Replace(commented, "10.244.0.0/16", "10.245.0.0/16", 1)},
		{"byte order mark", "\ufeffa: b\n", []string{"a"}, "c", "\ufeffa: c\n"},
		{"lone CR and LS", "a: b\rc: d\u2028e: é\n", []string{"e"}, "x", "a: b\rc: d\u2028e: x\n"},
		{"no final newline", "a: b", []string{"a"}, "ccc", "a: ccc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, root, err := Parse([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := text.SetScalar(find(t, root, c.path...), c.value); err != nil {
				t.Fatal(err)
			}
			got := string(text.Bytes())
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			_, again, err := Parse([]byte(got))
			if err != nil {
				t.Fatal(err)
			}
			if v := find(t, again, c.path...).Value; v != c.value {
				t.Errorf("reads back as %q, want %q", v, c.value)
			}
		})
	}
}

func TestSetScalarRefuses(t *testing.T) {
	cases := []struct {
		name, doc string
		path      []string
		value     string
		want      string
	}{
		{"literal", "a: |\n  x\n", []string{"a"}, "y", "block, tagged or multi-line"},
		{"folded", "a: >\n  x\n", []string{"a"}, "y", "block, tagged or multi-line"},
		{"tagged", "a: !!str x\n", []string{"a"}, "y", "block, tagged or multi-line"},
		{"anchored", "a: &x b\nc: *x\n", []string{"a"}, "y", "anchor"},
		{"multi-line plain", "a: b\n  c\n", []string{"a"}, "y", "not the parsed value"},
		{"multi-line double-quoted", "a: \"b\n  c\"\n", []string{"a"}, "y", "unterminated"},
		{"empty", "a:\nb: c\n", []string{"a"}, "y", "empty"},
		{"plain to quoted before a tab", "0\r\t", nil, "0", "indented with a tab"},
		{"invalid UTF-8", "a: b\n", []string{"a"}, "\xff", "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, root, err := Parse([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			err = text.SetScalar(find(t, root, c.path...), c.value)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if got := string(text.Bytes()); got != c.doc {
				t.Errorf("text changed to %q", got)
			}
		})
	}

	text, root, err := Parse([]byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := text.SetScalar(root.Content[0].Content[0], "k"); err == nil || !strings.Contains(err.Error(), "mapping key") {
		t.Errorf("editing a key: %v", err)
	}
	if err := text.SetScalar(&yaml.Node{Kind: yaml.ScalarNode, Value: "b", Line: 1, Column: 4}, "x"); err == nil {
		t.Error("a node of another text was edited")
	}
	n := find(t, root, "a")
	if err := text.SetScalar(n, "x"); err != nil {
		t.Fatal(err)
	}
	if err := text.SetScalar(n, "y"); err == nil || !strings.Contains(err.Error(), "already edited") {
		t.Errorf("editing a scalar twice: %v", err)
	}
	if _, _, err := Parse([]byte("\xff\xfea\x00:\x00")); err == nil {
		t.Error("UTF-16 text parsed")
	}
}

func TestReplaceScalarAndInsertLines(t *testing.T) {
	doc := "spec:\r\n  containers:\r\n  - command:\r\n    - kube-apiserver\r\n    - --port=6443\r\n    image: x\r\n  priority: 10"
	text, root, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	items := find(t, root, "spec", "containers", "[0]", "command")
	last := items.Content[len(items.Content)-1]
	prefix, err := text.Prefix(last)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "    - " {
		t.Errorf("prefix %q", prefix)
	}
	if err := text.InsertLines(last.Line, prefix+"--a=1"); err != nil {
		t.Fatal(err)
	}
	if err := text.InsertLines(last.Line, prefix+"--b=2"); err != nil {
		t.Fatal(err)
	}
	prio := find(t, root, "spec", "priority")
	if err := text.ReplaceScalar(prio, "20"); err != nil {
		t.Fatal(err)
	}
	if err := text.InsertLines(prio.Line, "  hostNetwork: true"); err != nil {
		t.Fatal(err)
	}
	want := "spec:\r\n  containers:\r\n  - command:\r\n    - kube-apiserver\r\n    - --port=6443\r\n    - --a=1\r\n    - --b=2\r\n    image: x\r\n  priority: 20\n  hostNetwork: true"
	if got := string(text.Bytes()); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if err := text.InsertLines(99, "x"); err == nil {
		t.Error("inserted after line 99")
	}
}

func TestPrefixAndOffset(t *testing.T) {
	doc := "\ufeffé: [ü, \"ß\"]\r\n- x\u0085  ключ: 😀 v\n"
	text := &Text{src: doc}
	text.indexLines()
	cases := []struct {
		line, col int
		want      int
		err       string
	}{
		{1, 1, 3, ""},
		{1, 5, 3 + len("é: ["), ""},
		{1, 8, 3 + len("é: [ü, "), ""},
		{1, 12, 3 + len("é: [ü, \"ß\"]"), ""},
		{1, 13, 0, "column 13 out of range on line 1"},
		{2, 4, len("\ufeffé: [ü, \"ß\"]\r\n- x"), ""},
		{3, 9, len("\ufeffé: [ü, \"ß\"]\r\n- x\u0085  ключ: "), ""},
		{3, 11, len("\ufeffé: [ü, \"ß\"]\r\n- x\u0085  ключ: 😀 "), ""},
		{4, 1, len(doc), ""},
		{5, 1, 0, "line 5 out of range"},
	}
	for _, c := range cases {
		got, err := text.offset(c.line, c.col)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%d:%d: error %v, want %q", c.line, c.col, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%d:%d = %d, %v; want %d", c.line, c.col, got, err, c.want)
		}
	}
}

func TestQuote(t *testing.T) {
	cases := []struct {
		v     string
		style yaml.Style
		want  string
	}{
		{"10.96.0.0/12", 0, "10.96.0.0/12"},
		{"fd00:10:96::/108", 0, "fd00:10:96::/108"},
		{"10.96.0.0/12,fd00::/108", 0, "10.96.0.0/12,fd00::/108"},
		{"", 0, `""`},
		{"8080", 0, `"8080"`},
		{"null", 0, `"null"`},
		{"<<", 0, `"<<"`},
		{"a # b", 0, `"a # b"`},
		{"it's", yaml.SingleQuotedStyle, `'it''s'`},
		{"tab\there", yaml.SingleQuotedStyle, "'tab\there'"},
		{"x\ny", yaml.SingleQuotedStyle, `"x\ny"`},
		{"a\u0085b\u2028c\u007fd\ufeffe", yaml.SingleQuotedStyle, `"a\u0085b\u2028c\u007fd\ufeffe"`},
		{"\x01\b\f\r", yaml.DoubleQuotedStyle, `"\u0001\b\f\r"`},
		{"é 😀", yaml.DoubleQuotedStyle, `"é 😀"`},
	}
	for _, c := range cases {
		got, err := Quote(c.v, c.style)
		if err != nil || got != c.want {
			t.Errorf("Quote(%q, %d) = %s, %v; want %s", c.v, c.style, got, err, c.want)
		}
	}
	// Double quotes are JSON's for everything JSON and YAML both allow raw.
	for _, v := range []string{"plain", `"q" \ /`, "\n\r\t\x00\x1f", "é\u2028\u2029", "<&>"} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if got, want := doubleQuote(v), strings.TrimSuffix(b.String(), "\n"); got != want {
			t.Errorf("doubleQuote(%q) = %s, JSON writes %s", v, got, want)
		}
	}
}

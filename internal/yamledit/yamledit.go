package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Text is a YAML document's source with the edits queued against it.
type Text struct {
	src     string
	lines   []line
	scalars map[*yaml.Node]place
	edits   []edit
}

// line is one line of the source as byte offsets: its text is
// src[start:end] and its line break src[end:next].
type line struct{ start, end, next int }

// place is where a scalar stands: inside a flow collection, and inside a
// mapping key.
type place struct{ flow, key bool }

// edit replaces src[start:end] (an insertion when start == end) by text.
type edit struct {
	start, end int
	text       string
}

const bom = "\xef\xbb\xbf"

// Parse parses the first YAML document of src with yaml.v3 and returns its
// text, ready for edits, and its document node. The error is yaml.v3's,
// or says that the text is UTF-16 (whose offsets are not UTF-8 bytes).
func Parse(src []byte) (*Text, *yaml.Node, error) {
	if bytes.HasPrefix(src, []byte{0xfe, 0xff}) || bytes.HasPrefix(src, []byte{0xff, 0xfe}) {
		return nil, nil, errors.New("yamledit: UTF-16 text is not supported")
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, nil, err
	}
	t := &Text{src: string(src), scalars: map[*yaml.Node]place{}}
	t.indexLines()
	t.indexScalars(&root, place{})
	return t, &root, nil
}

// indexLines splits the source at the line breaks yaml.v3 counts.
func (t *Text) indexLines() {
	start := 0
	if strings.HasPrefix(t.src, bom) {
		start = len(bom)
	}
	for i := start; i < len(t.src); {
		n := breakLen(t.src[i:])
		if n == 0 {
			i++
			continue
		}
		t.lines = append(t.lines, line{start: start, end: i, next: i + n})
		i += n
		start = i
	}
	t.lines = append(t.lines, line{start: start, end: len(t.src), next: len(t.src)})
}

// breakLen is the length of the line break s starts with, or 0.
func breakLen(s string) int {
	switch {
	case strings.HasPrefix(s, "\r\n"):
		return 2
	case s[0] == '\r' || s[0] == '\n':
		return 1
	case strings.HasPrefix(s, "\u0085"):
		return 2
	case strings.HasPrefix(s, "\u2028"), strings.HasPrefix(s, "\u2029"):
		return 3
	}
	return 0
}

// indexScalars records where each scalar under n stands. Aliases are not
// followed: the node they name is indexed where it is defined.
func (t *Text) indexScalars(n *yaml.Node, p place) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			t.indexScalars(c, p)
		}
	case yaml.SequenceNode, yaml.MappingNode:
		p.flow = p.flow || n.Style&yaml.FlowStyle != 0
		for i, c := range n.Content {
			t.indexScalars(c, place{flow: p.flow, key: p.key || n.Kind == yaml.MappingNode && i%2 == 0})
		}
	case yaml.ScalarNode:
		t.scalars[n] = p
	}
}

// offset converts a 1-based line and column, as yaml.v3 reports them, to
// a byte offset in the source.
func (t *Text) offset(lineNo, col int) (int, error) {
	if lineNo < 1 || lineNo > len(t.lines) {
		return 0, fmt.Errorf("line %d out of range", lineNo)
	}
	l := t.lines[lineNo-1]
	off := l.start
	for c := 1; c < col; c++ {
		if off >= l.end {
			return 0, fmt.Errorf("column %d out of range on line %d", col, lineNo)
		}
		_, size := utf8.DecodeRuneInString(t.src[off:l.end])
		off += size
	}
	return off, nil
}

// Prefix returns the text on n's line before n, such as its indentation
// and a sequence's dash.
func (t *Text) Prefix(n *yaml.Node) (string, error) {
	off, err := t.offset(n.Line, n.Column)
	if err != nil {
		return "", err
	}
	return t.src[t.lines[n.Line-1].start:off], nil
}

// token returns the byte range of the scalar n's text, quotes included,
// after checking that the text there reads back as n.Value. It refuses
// block, tagged, anchored, multi-line and empty plain scalars.
func (t *Text) token(n *yaml.Node) (int, int, error) {
	if _, ok := t.scalars[n]; !ok {
		return 0, 0, errors.New("the node is not a scalar of this text")
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle|yaml.FlowStyle) != 0 || strings.Contains(n.Value, "\n") {
		return 0, 0, fmt.Errorf("the scalar on line %d is a block, tagged or multi-line scalar", n.Line)
	}
	if n.Anchor != "" {
		return 0, 0, fmt.Errorf("the scalar on line %d has an anchor", n.Line)
	}
	start, err := t.offset(n.Line, n.Column)
	if err != nil {
		return 0, 0, err
	}
	rest := t.src[start:t.lines[n.Line-1].end]
	var tok string
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		end := closingQuote(rest)
		if end < 0 {
			return 0, 0, fmt.Errorf("unterminated double-quoted scalar on line %d", n.Line)
		}
		tok = rest[:end+1]
		var v string
		if yaml.Unmarshal([]byte(tok), &v) != nil || v != n.Value {
			return 0, 0, fmt.Errorf("the text on line %d is not the parsed value", n.Line)
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		tok = "'" + strings.ReplaceAll(n.Value, "'", "''") + "'"
	default:
		if n.Value == "" {
			return 0, 0, fmt.Errorf("the scalar on line %d is empty", n.Line)
		}
		tok = n.Value
	}
	if !strings.HasPrefix(rest, tok) {
		return 0, 0, fmt.Errorf("the text on line %d is not the parsed value", n.Line)
	}
	return start, start + len(tok), nil
}

// closingQuote finds the '"' closing the double-quoted scalar s starts.
func closingQuote(s string) int {
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// SetScalar replaces the scalar n, a value (not a key) of this text, by
// the string v, written in n's quoting style where v allows it (see
// Quote); a plain scalar inside a flow collection stays plain only when
// it reads back as v there.
func (t *Text) SetScalar(n *yaml.Node, v string) error {
	text, err := Quote(v, n.Style)
	if err != nil {
		return err
	}
	if text == v && t.scalars[n].flow && !plainInFlow(v) {
		text = doubleQuote(v)
	}
	return t.ReplaceScalar(n, text)
}

// ReplaceScalar replaces the text of the scalar n, a value (not a key) of
// this text, by text, which must be a one-line YAML scalar that can stand
// where n stands (a number, true, null, or text from Quote).
func (t *Text) ReplaceScalar(n *yaml.Node, text string) error {
	if t.scalars[n].key {
		return fmt.Errorf("the scalar on line %d is in a mapping key", n.Line)
	}
	start, end, err := t.token(n)
	if err != nil {
		return err
	}
	if n.Style == 0 && (strings.HasPrefix(text, "\"") || strings.HasPrefix(text, "'")) {
		if l := t.tabIndented(n.Line); l > 0 {
			return fmt.Errorf("the plain scalar on line %d cannot become quoted: line %d is indented with a tab", n.Line, l)
		}
	}
	return t.replace(start, end, text)
}

// tabIndented returns the first line after lineNo, up to the next line
// with content other than a comment, that has a tab in its indentation,
// or 0. A plain scalar absorbs such lines; after a quoted scalar yaml.v3
// rejects them.
func (t *Text) tabIndented(lineNo int) int {
	for i := lineNo; i < len(t.lines); i++ {
		l := t.lines[i]
		s := t.src[l.start:l.end]
		rest := strings.TrimLeft(s, " \t")
		if strings.Contains(s[:len(s)-len(rest)], "\t") {
			return i + 1
		}
		if rest != "" && rest[0] != '#' {
			return 0
		}
	}
	return 0
}

// InsertLines inserts lines after the 1-based line after, each ended by
// that line's line break (a line without one gets "\n" before them).
func (t *Text) InsertLines(after int, lines ...string) error {
	if after < 1 || after > len(t.lines) {
		return fmt.Errorf("line %d out of range", after)
	}
	l := t.lines[after-1]
	eol := t.src[l.end:l.next]
	var b strings.Builder
	for _, s := range lines {
		if eol != "" {
			b.WriteString(s + eol)
		} else {
			b.WriteString("\n" + s)
		}
	}
	return t.replace(l.next, l.next, b.String())
}

// replace queues replacing src[start:end] by text. Replacements must not
// overlap; insertions at one offset are applied in the order queued.
func (t *Text) replace(start, end int, text string) error {
	for _, e := range t.edits {
		if start < e.end && e.start < end {
			return fmt.Errorf("bytes %d to %d are already edited", start, end)
		}
	}
	t.edits = append(t.edits, edit{start: start, end: end, text: text})
	return nil
}

// Bytes returns the source with the queued edits applied.
func (t *Text) Bytes() []byte {
	edits := append([]edit(nil), t.edits...)
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].end < edits[j].end
	})
	var b bytes.Buffer
	pos := 0
	for _, e := range edits {
		b.WriteString(t.src[pos:e.start])
		b.WriteString(e.text)
		pos = e.end
	}
	b.WriteString(t.src[pos:])
	return b.Bytes()
}

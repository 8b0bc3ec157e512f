package ruleset

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// TextReplace is one text replacement: in the string at Path (a pointer or
// a pattern), or in every string below it, every occurrence of From (a
// literal) or every match of Regex (RE2, Go's regexp; To may name groups
// as $1 or ${name}) becomes To. Keys and non-string values are left alone.
type TextReplace struct {
	Path  string `yaml:"path"`
	From  string `yaml:"from"`
	Regex string `yaml:"regex"`
	To    string `yaml:"to"`

	re *regexp.Regexp
}

// Expect is what a rule must do for the run to go on.
type Expect struct {
	// Min is the least number of objects the rule must change or delete
	// (0, the default, lets a rule do nothing; the notes then warn).
	Min int `yaml:"min"`
}

func (t *TextReplace) compile() error {
	if err := checkPattern(t.Path); err != nil || t.Path == "" {
		return errors.New(pointerProblem(t.Path, err))
	}
	switch {
	case (t.From == "") == (t.Regex == ""):
		return errors.New("give exactly one of from (a literal text) and regex")
	case t.Regex != "":
		re, err := regexp.Compile(t.Regex)
		if err != nil {
			return fmt.Errorf("regex: %v", err)
		}
		t.re = re
	}
	return nil
}

// text replaces in one string, returning the result and the number of
// matches.
func (t *TextReplace) text(s string) (string, int) {
	if t.re == nil {
		n := strings.Count(s, t.From)
		if n == 0 {
			return s, 0
		}
		return strings.ReplaceAll(s, t.From, t.To), n
	}
	n := len(t.re.FindAllStringIndex(s, -1))
	if n == 0 {
		return s, 0
	}
	return t.re.ReplaceAllString(s, t.To), n
}

// value replaces in a string, or in every string of a list or object
// (keys kept), in place; it returns the new value and the matches.
func (t *TextReplace) value(v any) (any, int) {
	total := 0
	nv, _ := mapStrings(v, func(s string) (string, error) { // text never fails
		s, n := t.text(s)
		total += n
		return s, nil
	})
	return nv, total
}

// apply runs the replacement on doc (modified in place) and counts the
// matches. A plain pointer with nothing there is an error; a pattern may
// name no place at all.
func (t *TextReplace) apply(doc any) (int, error) {
	total := 0
	for _, p := range Expand(doc, t.Path) {
		v, ok := get(doc, p)
		if !ok {
			return 0, fmt.Errorf("replace: the object has nothing at %s", p)
		}
		nv, n := t.value(v)
		if n > 0 {
			set(doc, p, nv)
		}
		total += n
	}
	return total, nil
}

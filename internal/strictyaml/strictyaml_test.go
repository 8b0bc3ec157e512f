package strictyaml

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	PeerURL string `json:"peerURL"`
	Name    string `json:"name"`
}

type Embedded struct {
	ServiceSubnet string `json:"serviceSubnet"`
}

type doc struct {
	Kind    string `json:"kind"`
	Network struct {
		Embedded
		DNSDomain string `json:"dnsDomain"`
	} `json:"networking"`
	Members []inner           `json:"members"`
	Count   int32             `json:"count"`
	On      bool              `json:"on"`
	Labels  map[string]string `json:"labels"`
	Any     any               `json:"any"`
}

func TestCheck(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"kind: x\nnetworking: {serviceSubnet: a, dnsDomain: b}\nmembers: [{name: a, peerURL: b}]\nlabels: {Any: x}\nany: {Whatever: 1}\n", ""},
		{"kind: x\nmembers:\n- name: a\n  peerUrl: b\n", "members[0].peerUrl (line 4): unknown key, did you mean peerURL? (keys are case-sensitive)"},
		{"networking:\n  servicesubnet: a\n", "networking.servicesubnet (line 2): unknown key, did you mean serviceSubnet? (keys are case-sensitive)"},
		{"networking:\n  serviceSubnets: a\n", "networking.serviceSubnets (line 2): unknown key, did you mean serviceSubnet?"},
		{"kind: x\n\nsnapshot: a\n", "snapshot (line 3): unknown key (valid: any, count, kind, labels, members, networking, on)"},
		// Values of the wrong kind: the key, its line, what it takes (issue 35), never a Go type.
		{"kind: x\nnetworking:\n  serviceSubnet: [172.24.0.0/16]\n", "networking.serviceSubnet (line 3): takes a string, not a list"},
		{"members: {name: a}\n", "members (line 1): takes a list, not a mapping"},
		{"members:\n- cp1\n", "members[0] (line 2): takes a mapping (key: value), not \"cp1\""},
		{"count: three\n", "count (line 1): takes a whole number, not \"three\""},
		{"count: 3\non: 1\n", "on (line 2): takes true or false, not the number 1"},
		{"networking: 10.0.0.0/8\n", "networking (line 1): takes a mapping (key: value), not \"10.0.0.0/8\""},
		{"kind: 1.5\nnetworking: {serviceSubnet: 10}\ncount: ~\n", ""}, // scalars into strings, null: the decoder's
		// A key given twice (the decoder says "key already set in map", or keeps the last).
		{"kind: x\nnetworking:\n  serviceSubnet: a\n  dnsDomain: b\n  serviceSubnet: c\n", "networking.serviceSubnet (line 5): given twice, at lines 3 and 5: keep one"},
		{"labels: {a: x, a: y}\n", "labels.a (line 1): given twice, at lines 1 and 1: keep one"},
		// Every mistake in one run, in the file's order (a file with two typos is not fixed in two rounds).
		{"out: x\nnetworking:\n  serviceSubnets: a\ncount: three\n", "out (line 1): unknown key (valid: any, count, kind, labels, members, networking, on); networking.serviceSubnets (line 3): unknown key, did you mean serviceSubnet?; count (line 4): takes a whole number, not \"three\""},
		{"kinds: 1\nlabel: 1\nmember: 1\ncounts: 1\nnetwork: 1\nany2: 1\nonn: 1\n", "kinds (line 1): unknown key, did you mean kind?; label (line 2): unknown key, did you mean labels?; member (line 3): unknown key, did you mean members?; counts (line 4): unknown key, did you mean count?; network (line 5): unknown key, did you mean networking?; and 2 more"},
	} {
		err := Check([]byte(c.in), &doc{}, "json")
		var se *Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.As(err, &se)):
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
	if k := Kind([]byte("apiVersion: v1\nkind: RuleSet\n")); k != "RuleSet" {
		t.Errorf("Kind = %q", k)
	}
	type yamlDoc struct {
		Match struct {
			Namespaces []string `yaml:"namespaces"`
		} `yaml:"match"`
	}
	err := Check([]byte("match:\n  namespace: [a]\n"), &yamlDoc{}, "yaml")
	if err == nil || !strings.Contains(err.Error(), "match.namespace (line 2): unknown key, did you mean namespaces?") {
		t.Errorf("yaml tags: %v", err)
	}
}

// keyed decodes its keys itself (as rebuild's networking section does), so its strings get no
// hints from the YAML decoder: a number there is refused with its line, not left to the JSON
// decoder's "cannot unmarshal number into Go value of type string".
type keyed struct{}

func (keyed) Keys() map[string]reflect.Type {
	return map[string]reflect.Type{"serviceSubnet": reflect.TypeOf(""), "repack": reflect.TypeOf(true)}
}
func (*keyed) UnmarshalJSON([]byte) error { return nil }

type counted struct {
	Bump  uint64 `json:"bump"`
	Small int8   `json:"small"`
	Net   keyed  `json:"networking"`
	Name  string `json:"name"`
}

// TestCheckNumbers: what the JSON decoder would refuse without a line is refused here with
// one: a negative or too large count, a number where a self-decoding section wants a string;
// CheckTypes ignores unknown keys and refuses a number for any string.
func TestCheckNumbers(t *testing.T) {
	for _, c := range []struct {
		in, want string
		types    bool
	}{
		{in: "bump: -1\n", want: "bump (line 1): takes a whole number, 0 or more, not the number -1"},
		{in: "bump: 18446744073709551616\n", want: "bump (line 1): takes a whole number, 0 or more, not the number 18446744073709551616"},
		{in: "small: 300\n", want: "small (line 1): takes a whole number, not the number 300"},
		{in: "bump: 0x10\nsmall: -128\nname: 12\n"},
		{in: "networking:\n  serviceSubnet: 12\n", want: `networking.serviceSubnet (line 2): takes a string, not the number 12 (quote it: "12")`},
		{in: "networking:\n  serviceSubnet: \"12\"\n  repack: true\n"},
		{in: "name: true\nother: [x]\n", types: true, want: `name (line 1): takes a string, not true (quote it: "true")`},
		{in: "name: x\nother: [x]\n", types: true},
	} {
		check := Check
		if c.types {
			check = CheckTypes
		}
		err := check([]byte(c.in), &counted{}, "json")
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestHeader(t *testing.T) {
	for _, c := range []struct{ api, kind, want string }{
		{"snapshift.io/v1alpha1", "RuleSet", ""},
		{"", "", "apiVersion and kind are missing: the file begins with apiVersion: snapshift.io/v1alpha1 and kind: RuleSet"},
		{"snapshift.io/v1alpha1", "", "kind is missing: the file begins with apiVersion: snapshift.io/v1alpha1 and kind: RuleSet"},
		{"", "Rules", "apiVersion is missing, kind is Rules, not RuleSet: the file begins with apiVersion: snapshift.io/v1alpha1 and kind: RuleSet"},
	} {
		if got := Header(c.api, c.kind, "snapshift.io/v1alpha1", "RuleSet"); got != c.want {
			t.Errorf("Header(%q, %q) = %q, want %q", c.api, c.kind, got, c.want)
		}
	}
}

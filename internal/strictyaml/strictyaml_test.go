package strictyaml

import (
	"errors"
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

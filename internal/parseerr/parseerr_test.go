package parseerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// libraryWording is what no message a user reads may hold: the decoders' and parsers' own
// words and Go's type names.
var libraryWording = regexp.MustCompile(`Go (value|struct field)|cannot unmarshal|converting YAML to JSON|unmarshaling JSON|decoding JSON|` +
	`strconv\.|invalid syntax|\bjson: |(^|: )yaml: |time: |netip\.|ParseAddr\(|ParsePrefix\(|invalid CIDR address|parse "|JSON input|` +
	`\[\]v1\.|\bint32\b|\buint64\b|!!str|!!int|not found in type`)

type pod struct {
	Spec struct {
		Containers []struct {
			Name  string `json:"name"`
			Stdin bool   `json:"stdin"`
		} `json:"containers"`
	} `json:"spec"`
}

type counts struct {
	Bump  uint64 `json:"bump" yaml:"bump"`
	Ports []int  `json:"ports" yaml:"ports"`
}

// TestExplainRealErrors runs the real decoders and parsers on bad input and checks what Explain
// makes of each error: the key, the form wanted and what was given, and none of the library's words.
func TestExplainRealErrors(t *testing.T) {
	var p pod
	var c counts
	var s string
	var v3 struct {
		Match struct {
			Resource string `yaml:"resource"`
		} `yaml:"match"`
	}
	_, _, cidrErr := net.ParseCIDR("10.0.0.0")
	_, prefixErr := netip.ParsePrefix("10.0.0.0")
	_, addrErr := netip.ParseAddr("10.0.0.300")
	_, urlErr := url.Parse("https://10.0.0.1:port")
	_, boolErr := strconv.ParseBool("yes")
	_, intErr := strconv.Atoi("three")
	_, rangeErr := strconv.ParseUint("99999999999999999999999", 10, 64)
	_, durErr := time.ParseDuration("soon")
	_, unitErr := time.ParseDuration("1y")
	strictDec := yaml.NewDecoder(strings.NewReader("match:\n  resource: x\n  namespace: [a]\n"))
	strictDec.KnownFields(true)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"a number for a list, through sigs.k8s.io/yaml", sigsyaml.Unmarshal([]byte("spec:\n  containers: 5\n"), &p), "spec.containers: takes a list, not a number"},
		{"a word for a switch", sigsyaml.Unmarshal([]byte("spec:\n  containers:\n  - stdin: maybe\n"), &p), "spec.containers.stdin: takes true or false, not a string"},
		{"a negative count", sigsyaml.Unmarshal([]byte("bump: -1\n"), &c), "bump: takes a whole number, 0 or more, not the number -1"},
		{"a number for a string, no field", json.Unmarshal([]byte(`12`), &s), "takes a string, not a number"},
		{"a YAML tab", sigsyaml.Unmarshal([]byte("spec:\n\tcontainers: []\n"), &p), "line 2: not valid YAML: found character that cannot start any token (a tab where YAML wants spaces"},
		{"an unclosed list", sigsyaml.Unmarshal([]byte("ports: [1, 2\n"), &c), "line 1: not valid YAML: did not find expected ',' or ']'"},
		{"yaml.v3 type error", yaml.Unmarshal([]byte("bump: lots\nports: [a]\n"), &c), "line 1: takes a whole number, 0 or more, not \"lots\"; line 2: takes a whole number, not \"a\""},
		{"yaml.v3 unknown field", strictDec.Decode(&v3), "line 3: unknown key namespace"},
		{"a key given twice, through sigs.k8s.io/yaml", sigsyaml.UnmarshalStrict([]byte("bump: 1\nbump: 2\n"), &c), "line 2: bump is given twice: keep one"},
		{"JSON cut short", json.Unmarshal([]byte(`{"nodes": [`), &c), "the JSON ends too early (is the file cut short?)"},
		{"JSON syntax", json.Unmarshal([]byte(`{"bump": x}`), &c), "not valid JSON at byte 10: unexpected character 'x'"},
		{"net.ParseCIDR", cidrErr, `"10.0.0.0" is not a CIDR such as 10.0.0.0/16`},
		{"netip.ParsePrefix", prefixErr, `"10.0.0.0" is not a CIDR such as 10.0.0.0/16`},
		{"netip.ParseAddr", addrErr, `"10.0.0.300" is not an IP address such as 10.0.0.1`},
		{"url.Parse", urlErr, `"https://10.0.0.1:port" is not a URL such as https://10.0.0.1:2379`},
		{"strconv.ParseBool", boolErr, `"yes" is not true or false`},
		{"strconv.Atoi", intErr, `"three" is not a whole number`},
		{"strconv out of range", rangeErr, `"99999999999999999999999" is out of range: give a whole number, 0 or more that fits`},
		{"time.ParseDuration", durErr, `"soon" is not a duration such as 30s, 5m or 1h`},
		{"a unit time does not know", unitErr, `"1y" is not a duration such as 30s, 5m or 1h`},
		{"wrapped, with the caller's words kept", fmt.Errorf("rebuild configuration c.yaml: %w", sigsyaml.UnmarshalStrict([]byte("bump: -1\n"), &c)),
			"rebuild configuration c.yaml: bump: takes a whole number, 0 or more, not the number -1"},
		{"wrapped with %v", fmt.Errorf("kubeconfig: error loading config file \"kc\": %v (give --kubeconfig)", sigsyaml.Unmarshal([]byte("spec: {containers: 5}"), &p)),
			`kubeconfig: error loading config file "kc": spec.containers: takes a list, not a number (give --kubeconfig)`},
	} {
		if c.err == nil {
			t.Errorf("%s: the library took the bad input", c.name)
			continue
		}
		got := Explain(c.err).Error()
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q\n  became %q\n  want   %q", c.name, c.err, got, c.want)
		}
		if m := libraryWording.FindString(got); m != "" {
			t.Errorf("%s: %q still says %q", c.name, got, m)
		}
	}
}

// TestExplainKeepsTheError: an error without library wording comes back as it is, and an
// explained one still unwraps to what it wraps.
func TestExplainKeepsTheError(t *testing.T) {
	plain := fmt.Errorf("output %s is not empty: %w", "/x", fs.ErrExist)
	if Explain(plain) != plain {
		t.Error("Explain changed an error with nothing to explain")
	}
	_, err := strconv.ParseBool("yes")
	wrapped := fmt.Errorf("reading: %w", errors.Join(err, fs.ErrInvalid))
	got := Explain(wrapped)
	if !errors.Is(got, fs.ErrInvalid) || !errors.Is(got, strconv.ErrSyntax) {
		t.Errorf("Explain(%q) = %q unwraps to neither", wrapped, got)
	}
	if Explain(nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}

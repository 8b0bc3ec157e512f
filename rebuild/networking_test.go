package rebuild

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/rules"
)

// TestNetworkingFromRegistry: every registered option whose rebuild-file
// path is networking.<key> is read from that key, and an unknown key is
// refused as before.
func TestNetworkingFromRegistry(t *testing.T) {
	var scratch rules.Options
	n := 0
	for _, opt := range rules.AllOptions(&scratch) {
		key, ok := strings.CutPrefix(opt.Config, "networking.")
		if !ok {
			continue
		}
		n++
		var val string
		switch opt.Value.(type) {
		case *string:
			val = "x"
		case *bool:
			val = "true"
		case *[]string:
			val = "[x]"
		default:
			t.Fatalf("option %s: a networking key cannot hold %T", opt.Name, opt.Value)
		}
		var c Config
		if err := yaml.UnmarshalStrict([]byte("networking:\n  "+key+": "+val+"\n"), &c); err != nil {
			t.Fatalf("networking.%s: %v", key, err)
		}
		var got rules.Options = c.Networking.Options
		for _, o := range rules.AllOptions(&got) {
			if o.Field == opt.Field {
				if b, err := yaml.Marshal(o.Value); err != nil || strings.TrimSpace(string(b)) == "" || string(b) == "\"\"\n" || string(b) == "false\n" || string(b) == "[]\n" {
					t.Errorf("networking.%s was not read into %s: %s", key, opt.Field, b)
				}
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d networking options registered", n)
	}
	var c Config
	if err := yaml.UnmarshalStrict([]byte("networking:\n  podSubnet: 10.55.0.0/16\n  nonsense: 1\n"), &c); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("an unknown networking key: %v, want an error naming it", err)
	}
	if err := yaml.UnmarshalStrict([]byte("networking:\n  podSubnet: 10.55.0.0/16\n  dnsDomain: corp.local\n"), &c); err != nil || c.Networking.PodNetworkCIDR != "10.55.0.0/16" || c.Networking.DNSDomain != "corp.local" {
		t.Errorf("networking: %v, %+v", err, c.Networking)
	}
}

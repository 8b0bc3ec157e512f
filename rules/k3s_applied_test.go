package rules_test

import (
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/rules"
)

// TestAppliedCodec: the rule's codec reads what the corpus's wrangler encoding writes and writes it
// back byte for byte (gzip at the default level, base64 without padding); a plain-JSON annotation is
// read as is; damaged ones are errors, not silently dropped as wrangler drops them.
func TestAppliedCodec(t *testing.T) {
	desired, err := sample.K3sCoreDNSDesired("10.43.0.10")
	if err != nil {
		t.Fatal(err)
	}
	ann, err := sample.WranglerApplied(desired)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(ann, "=") {
		t.Fatalf("wrangler's base64 has no padding: %s", ann)
	}
	doc, compressed, err := rules.DecodeApplied(ann)
	if err != nil || !compressed || !strings.Contains(string(doc), `"clusterIP":"10.43.0.10"`) {
		t.Fatalf("DecodeApplied = %s, %v, %v", doc, compressed, err)
	}
	again, err := rules.EncodeApplied(doc)
	if err != nil || again != ann {
		t.Errorf("EncodeApplied(DecodeApplied(a)) != a:\n%s\n%s", again, ann)
	}
	if doc, compressed, err := rules.DecodeApplied(`{"kind":"ConfigMap"}`); err != nil || compressed || string(doc) != `{"kind":"ConfigMap"}` {
		t.Errorf("plain JSON: %s, %v, %v", doc, compressed, err)
	}
	for _, bad := range []string{"not base64!", "aGVsbG8"} { // the second is base64 of "hello": not gzip
		if _, _, err := rules.DecodeApplied(bad); err == nil {
			t.Errorf("DecodeApplied(%q) accepted", bad)
		}
	}
}

package rules

import (
	"strings"
	"testing"

	"github.com/snapshift/snapshift/ruleset"
)

// TestTextEditShowsTheChangedPart: a change inside a long value is shown by its changed part
// with its line's context (docs/RULES.md), also when it is on several lines of a config file or
// when only the new value is long (issue 35: "(270 characters) -> (270 characters)", "-> (61
// characters)").
func TestTextEditShowsTheChangedPart(t *testing.T) {
	conf := "server {\n    listen 80;\n    location / {\n        proxy_pass http://192.168.10.21:8080;\n    }\n" +
		"    location /api {\n        proxy_pass http://192.168.10.22:9090;\n    }\n    access_log /var/log/nginx/access.log main;\n}\n"
	moved := strings.NewReplacer("192.168.10.21", "10.20.10.21", "192.168.10.22", "10.20.10.22").Replace(conf)
	for _, c := range []struct {
		old, new         string
		wantOld, wantNew string
		shownByPart      bool
	}{
		{conf, moved, "…ass http://192.168.10.21:8080;…; …ass http://192.168.10.22:9090;…",
			"…ass http://10.20.10.21:8080;…; …ass http://10.20.10.22:9090;…", true},
		{"registry.old.example/platform/payments/api-gw:v1.2.3", "registry.new-and-longer.example/platform/payments/api-gw:v1.2.3",
			"registry.old.example/pla…", "registry.new-and-longer.example/pla…", true},
		{"short", "other", "", "", false},            // both short: shown whole
		{conf, conf + "extra line\n", "", "", false}, // a line added: not in parts
	} {
		o, n, ok := textEdit(ruleset.Diff{Pointer: "/x", Old: c.old, New: c.new})
		if ok != c.shownByPart || o != c.wantOld || n != c.wantNew {
			t.Errorf("textEdit(%.30q -> %.30q) = %q -> %q (%v), want %q -> %q (%v)", c.old, c.new, o, n, ok, c.wantOld, c.wantNew, c.shownByPart)
		}
	}
}

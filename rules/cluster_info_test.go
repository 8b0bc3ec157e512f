package rules_test

import (
	"strings"
	"testing"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/snapshift/snapshift/rules"
)

func TestValidBootstrapToken(t *testing.T) {
	generated, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		t.Fatal(err)
	}
	id, secret, _ := strings.Cut(generated, ".")
	for _, c := range []struct {
		id, secret string
		valid      bool
	}{
		{"abcdef", "0123456789abcdef", true},
		{id, secret, true},
		{"abcde", "0123456789abcdef", false},
		{"ABCDEF", "0123456789abcdef", false},
		{"abcdef", "0123456789abcdeF", false},
		{"abcdef", "0123456789abcde", false},
		{"abc.ef", "0123456789abcdef", false},
		{"abcdef", "0123456.89abcdef", false},
		{"", "", false},
	} {
		err := rules.ValidBootstrapToken(rules.BootstrapToken{ID: c.id, Secret: c.secret})
		if (err == nil) != c.valid {
			t.Errorf("%s.%s: %v, want valid %v", c.id, c.secret, err, c.valid)
		}
		if err != nil && c.secret != "" && strings.Contains(err.Error(), c.secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

package option

import (
	"errors"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	cause := errors.New("bad prefix")
	err := Errorf("OldServiceCIDR", "{} needs {ServiceCIDR}: %w", cause)
	if got, want := err.Error(), "OldServiceCIDR needs ServiceCIDR: bad prefix"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	flag := func(f string) string { return "--" + strings.ToLower(f) }
	if got, want := err.Render(flag), "--oldservicecidr needs --servicecidr: bad prefix"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Errorf("errors.Is(err, cause) = false; the cause must stay reachable")
	}
	var oe *Error
	if !errors.As(error(err), &oe) || oe.Field != "OldServiceCIDR" {
		t.Errorf("errors.As: %v, field %q", oe, oe.Field)
	}
}

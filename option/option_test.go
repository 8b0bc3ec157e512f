package option

import (
	"errors"
	"fmt"
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

func TestRenderWrapped(t *testing.T) {
	err := fmt.Errorf("rule pod-cidr: %w", Errorf("OldPodNetworkCIDR", "{} 10.32.0.0/12 does not match what the snapshot holds"))
	got, ok := Render(err, func(f string) string { return "<" + f + ">" })
	if want := "rule pod-cidr: <OldPodNetworkCIDR> 10.32.0.0/12 does not match what the snapshot holds"; !ok || got != want {
		t.Errorf("Render = %q, %v; want %q", got, ok, want)
	}
	if got, ok := Render(errors.New("plain"), strings.ToUpper); ok || got != "plain" {
		t.Errorf("Render(plain) = %q, %v", got, ok)
	}
}

func TestWords(t *testing.T) {
	for field, want := range map[string]string{
		"APIServerBindPort": "API server bind port",
		"ServiceCIDR":       "service CIDR",
		"KeyAlgorithm":      "key algorithm",
		"CACertPaths":       "CA cert paths",
		"Force":             "force",
		"EtcdDataDir":       "etcd data dir",
	} {
		if got := Words(field); got != want {
			t.Errorf("Words(%q) = %q, want %q", field, got, want)
		}
	}
}

func TestLibraryTable(t *testing.T) {
	if err := Library().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestTableCheck: a field or a flag declared twice is refused.
func TestTableCheck(t *testing.T) {
	for name, tab := range map[string]Table{
		"field twice": {{Fields: []string{"Output"}, Flag: "out"}, {Fields: []string{"Output"}, Flag: "output-file"}},
		"flag twice":  {{Fields: []string{"Output"}, Flag: "out"}, {Fields: []string{"Dest"}, Flag: "out"}},
		"nothing":     {{Fields: []string{"Output"}}},
	} {
		if err := tab.Check(); err == nil {
			t.Errorf("%s: Check accepted %v", name, tab)
		}
	}
	tab := Table{{Fields: []string{"EtcdMembers", "EtcdMember"}, Flag: "etcd-member", Key: "etcd.members"}}
	if f, ok := tab.FlagName("EtcdMember"); !ok || f != "--etcd-member" {
		t.Errorf("FlagName = %q, %v", f, ok)
	}
	if k, ok := tab.KeyName("EtcdMembers"); !ok || k != "etcd.members" {
		t.Errorf("KeyName = %q, %v", k, ok)
	}
}

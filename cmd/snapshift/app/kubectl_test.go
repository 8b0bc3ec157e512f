package app

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/internal/testfile"
)

// TestHelpAnywhere: -h and --help show the command's help wherever they stand, after positional
// arguments and other flags too, with exit 0, as kubectl and etcdctl take them (issue 35).
func TestHelpAnywhere(t *testing.T) {
	in := copySample(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", in, "--service-cidr", newSvc, "--help"}, "snapshift plan - "},
		{[]string{"plan", in, "-h"}, "snapshift plan - "},
		{[]string{"transform", in, "-h", "--out", "x.db"}, "snapshift transform - "},
		{[]string{"get", in, "svc/default/kubernetes", "--help"}, "snapshift get - "},
		{[]string{"node", "apply", "--bundle", "b", "-h"}, "snapshift node apply - "},
		{[]string{"node", "-h"}, "snapshift node - "},
		{[]string{"--dry-run=server", "rebuild", "-h"}, "snapshift rebuild - "},
		{[]string{"-h"}, "snapshift - rewrite Kubernetes cluster state offline"},
		{[]string{"help", "plan"}, "snapshift plan - "},
	} {
		r := run(t, c.args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, c.want) || r.stderr != "" {
			t.Errorf("snapshift %s: exit %d, stdout %.80q, stderr %q; want exit 0 and the help %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.want)
		}
	}
	// After "--" it is an argument like any other.
	if r := run(t, "inspect", "--", "-h"); r.code == ExitOK || strings.Contains(r.stdout, "NAME:") {
		t.Errorf("inspect -- -h: exit %d, stdout %.80q: -h after -- is a file name", r.code, r.stdout)
	}
	// A misspelt command with -h is still the misspelling.
	if r := run(t, "tranform", "-h"); r.code != ExitUsage || !strings.Contains(r.stderr, "did you mean transform?") {
		t.Errorf("tranform -h: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestLsNothingUnder: ls of a prefix that holds no live key prints nothing on stdout, says so on
// stderr with the prefix probably meant, and exits 0 (an empty listing is an answer, as kubectl
// get's "No resources found"); -o json prints [].
func TestLsNothingUnder(t *testing.T) {
	in := copySample(t)
	for arg, want := range map[string]string{
		"/nothing/":          "nothing under /nothing/ in " + in + "\n",
		"/registry/servics/": "nothing under /registry/servics/ in " + in + "; did you mean /registry/services/?\n",
		"svc/kube-sytem/":    "nothing under svc/kube-sytem/ in " + in + "; did you mean svc/kube-system/?\n",
		"deploy/no-such-ns/": "nothing under deploy/no-such-ns/ in " + in + "\n",
	} {
		r := run(t, "ls", in, arg)
		if r.code != ExitOK || r.stdout != "" || r.stderr != want {
			t.Errorf("ls %s: exit %d, stdout %q, stderr %q; want exit 0, no stdout, stderr %q", arg, r.code, r.stdout, r.stderr, want)
		}
	}
	if r := run(t, "ls", in, "/nothing/", "-o", "json"); r.code != ExitOK || !strings.Contains(r.stdout, `"items": []`) || r.stderr != "" {
		t.Errorf("ls -o json: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// stored encodes obj as kube-apiserver stores it (protobuf with the k8s\0 magic).
func stored(t *testing.T, apiVersion, kind string, obj interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	raw, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), b...)
}

// leftoverGroups is the leftover scan as -o json and report.json list it.
type leftoverGroups struct {
	Groups []struct {
		Resource string `json:"resource"`
		Keys     int    `json:"keys"`
		Examples []any  `json:"examples"`
	} `json:"groups"`
}

// TestPlanOutputKubectlStyle: plan's text names objects as kubectl does (svc/default/kubernetes;
// the etcd key only in -o json), lists only the rules that did something, caps a pod-range
// refusal's node list like the Service refusal (all of it in -o json's details), and -o json
// lists every leftover key, where the text shows ten per resource (issue 35).
func TestPlanOutputKubectlStyle(t *testing.T) {
	var extra []sample.Entry
	for i := 0; i < 25; i++ {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fake%02d", i), UID: types.UID(fmt.Sprintf("n-%d", i))},
			Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.244.%d.0/24", 100+i), PodCIDRs: []string{fmt.Sprintf("10.244.%d.0/24", 100+i)}}}
		extra = append(extra, sample.Entry{Key: "/registry/minions/" + n.Name, Value: stored(t, "v1", "Node", n)})
	}
	for i := 0; i < 15; i++ {
		ip := fmt.Sprintf("10.244.1.%d", 100+i)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Namespace: "demo", UID: types.UID(fmt.Sprintf("p-%d", i))},
			Status: corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
		extra = append(extra, sample.Entry{Key: "/registry/pods/demo/" + p.Name, Value: stored(t, "v1", "Pod", p)})
	}
	in := writeFixture(t, filepath.Join(t.TempDir(), "in.db"), fixture{keys: sampleKVs(t, extra...)})

	// The refusal (issue 52 item 7): a summary on one line, the count, the
	// span and the smallest range that holds them; every node in -o json.
	text := run(t, "plan", in, "--pod-network-cidr", "10.55.0.0/20", "--quiet")
	lines := text.stderrLines()
	want := "26 node CIDRs do not fit 10.55.0.0/20 at their offsets (4112 to 31999 from the old range's start); the smallest range at that address that holds every one where it is: 10.55.0.0/17; choose a larger range, or pass --repack-nodes"
	if text.code != ExitRefused || len(lines) != 1 || !strings.Contains(lines[0], want) || len(lines[0]) > 400 || strings.Contains(lines[0], "fake24") {
		t.Errorf("plan --pod-network-cidr 10.55.0.0/20: exit %d, stderr (%d characters) %q; want exit 4 and %q", text.code, len(text.stderr), text.stderr, want)
	}
	machine := run(t, "plan", in, "--pod-network-cidr", "10.55.0.0/20", "--quiet", "-o", "json")
	var doc struct {
		Details []string `json:"details"`
	}
	if err := json.Unmarshal([]byte(machine.stdout), &doc); err != nil || len(doc.Details) != 26 {
		t.Errorf("plan -o json: %d details (want all 26): %v", len(doc.Details), err)
	}

	// The plan: kubectl's names, only the rules that acted, leftovers capped in text only.
	plan := run(t, "plan", in, "--service-cidr", newSvc, "--pod-network-cidr", "10.55.0.0/16", "--quiet")
	if plan.code != ExitOK {
		t.Fatalf("plan: exit %d: %s", plan.code, plan.stderr)
	}
	for _, want := range []string{"replace svc/default/kubernetes  spec.clusterIPs: 192.168.0.1 -> 172.24.0.1  [service-cidr]",
		"replace no/fake07  spec.podCIDRs: 10.244.107.0/24 -> 10.55.107.0/24  [pod-cidr]",
		"      po/demo/p00: 10.244.1.100", "… and 13 more (--output json lists every one)"} {
		if !strings.Contains(plan.stdout, want) {
			t.Errorf("plan's text lacks %q", want)
		}
	}
	for _, unwanted := range []string{"/registry/services/specs/default/kubernetes", "k3s-applied", "helm-chart-values"} {
		if strings.Contains(plan.stdout, unwanted) {
			t.Errorf("plan's text has %q", unwanted)
		}
	}
	js := run(t, "plan", in, "--service-cidr", newSvc, "--pod-network-cidr", "10.55.0.0/16", "--quiet", "-o", "json")
	var res struct {
		Objects []struct {
			Key string `json:"key"`
		} `json:"objects"`
		Rules []struct {
			Name string `json:"name"`
		} `json:"rules"`
		Leftovers leftoverGroups `json:"leftovers"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &res); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, o := range res.Objects {
		keys[o.Key] = true
	}
	rulesRun := map[string]bool{}
	for _, r := range res.Rules {
		rulesRun[r.Name] = true
	}
	if !keys["/registry/services/specs/default/kubernetes"] || !rulesRun["k3s-applied"] {
		t.Errorf("-o json: the etcd keys and every rule that ran: keys %v, rules %v", keys, rulesRun)
	}
	for _, g := range res.Leftovers.Groups {
		if g.Resource == "pods" && (g.Keys != 23 || len(g.Examples) != 23) {
			t.Errorf("-o json leftovers: pods %d keys, %d examples; want every one of 23", g.Keys, len(g.Examples))
		}
	}

	// rebuild (issue 52 item 5): its text caps the list as plan's does, and
	// what it says is true: -o json, and the bundle's report.json whatever
	// -o, list every key.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rebuild.yaml")
	body := "apiVersion: snapshift.io/v1alpha1\nkind: RebuildConfiguration\nsnapshot: " + in + "\noutput: " + filepath.Join(dir, "bundle") +
		"\nnetworking: {serviceSubnet: " + newSvc + ", podSubnet: 10.55.0.0/16}\netcd:\n  members:\n  - {name: cp1, peerURL: \"https://10.0.0.10:2380\", clientURL: \"https://10.0.0.10:2379\"}\nmanifests: {kubernetesVersion: v1.36.3}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rb := run(t, "rebuild", "--config", cfg)
	if rb.code != ExitOK {
		t.Fatalf("rebuild: exit %d: %s", rb.code, rb.stderr)
	}
	if !strings.Contains(rb.stdout, "… and 13 more (--output json lists every one)") {
		t.Errorf("rebuild's text does not cap the pods' leftovers at ten:\n%s", rb.stdout)
	}
	rj, err := os.ReadFile(filepath.Join(dir, "bundle", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Leftovers leftoverGroups `json:"leftovers"`
	}
	if err := json.Unmarshal(rj, &report); err != nil {
		t.Fatal(err)
	}
	pods := false
	for _, g := range report.Leftovers.Groups {
		if g.Resource == "pods" {
			pods = true
			if g.Keys != 23 || len(g.Examples) != 23 {
				t.Errorf("report.json leftovers: pods %d keys, %d examples; want every one of 23", g.Keys, len(g.Examples))
			}
		}
	}
	if !pods {
		t.Error("report.json lists no pods among the leftovers")
	}
}

// TestOutputDirNotWritable: an output directory this user may not write into is named, as a bad
// command line (exit 2), before any work; not the temporary file inside it (issue 35). Run as
// the user nobody in a child process (this test runs as root, who may write anywhere).
func TestOutputDirNotWritable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root to run the child as nobody (euid %d)", os.Geteuid())
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "snapshift.test")
	testfile.CopyTo(t, os.Args[0], bin)
	in := filepath.Join(dir, "in.db")
	testfile.CopyTo(t, samplePath, in)
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bin, in} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := childCommand(t, 0, "transform", in, "--out", filepath.Join(ro, "out.db"), "--service-cidr", newSvc, "--quiet")
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	want := "snapshift: output directory " + ro + " is not writable (permission denied): choose another, or run as a user who may write there\n"
	if code != ExitUsage || stderr.String() != want {
		t.Errorf("transform into a read-only directory as nobody: exit %d (%v), stderr %q; want exit 2 and %q", code, err, stderr.String(), want)
	}
}

// TestPlanNamesTheLiveAlternative: plan says once whether Kubernetes 1.33+'s ServiceCIDR objects
// could make the change live instead (a new service range that only adds addresses, the pod
// range unchanged), and why not when the plan moves kubernetes.default, kube-dns or the pod range
// (issue 35).
func TestPlanNamesTheLiveAlternative(t *testing.T) {
	in := copySample(t)
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--service-cidr", "192.168.0.0/15"}, "the new service range 192.168.0.0/15 only adds addresses to 192.168.0.0/16: Kubernetes 1.33+ adds them while the cluster runs"},
		{[]string{"--service-cidr", newSvc, "--pod-network-cidr", "10.55.0.0/16"}, "none: Kubernetes 1.33+ can extend the service range live with a new ServiceCIDR object (no downtime), " +
			"but it cannot move kubernetes.default (192.168.0.1 -> 172.24.0.1), the cluster DNS Service kube-system/kube-dns (192.168.0.10 -> 172.24.0.10) " +
			"or the pod range (10.244.0.0/16 -> 10.55.0.0/16)"},
		{[]string{"--service-cidr", "192.168.0.0/15", "--pod-network-cidr", "10.55.0.0/16"}, "but it cannot move the pod range (10.244.0.0/16 -> 10.55.0.0/16)"},
	} {
		r := run(t, append([]string{"plan", in, "--quiet"}, c.flags...)...)
		if r.code != ExitOK || !strings.Contains(r.stdout, c.want) || strings.Count(r.stdout, "ServiceCIDR object") != 1 {
			t.Errorf("plan %s: exit %d, want once %q in:\n%s", strings.Join(c.flags, " "), r.code, c.want, r.stdout)
		}
	}
	if r := run(t, "plan", in, "--quiet", "--pod-network-cidr", "10.55.0.0/16"); strings.Contains(r.stdout, "Live alternative") {
		t.Errorf("plan without a new service range names a live service-range alternative:\n%s", r.stdout)
	}
}

// TestNoLiveAlternativeToAMoveOfNothing: a --service-cidr that is the cluster's own range moves
// nothing, so plan offers no live alternative for it ("the new service range 192.168.0.0/16 only
// adds addresses to 192.168.0.0/16"; issue 52 item 8), with or without an unchanged pod range,
// nor when only the pod range moves.
func TestNoLiveAlternativeToAMoveOfNothing(t *testing.T) {
	in := copySample(t)
	for _, flags := range [][]string{
		{"--service-cidr", "192.168.0.0/16"},
		{"--service-cidr", "192.168.0.0/16", "--pod-network-cidr", "10.244.0.0/16"},
		{"--service-cidr", "192.168.0.0/16", "--pod-network-cidr", "10.55.0.0/16"},
	} {
		r := run(t, append([]string{"plan", in, "--quiet"}, flags...)...)
		if r.code != ExitOK || strings.Contains(r.stdout, "Live alternative") || strings.Contains(r.stdout, "ServiceCIDR") {
			t.Errorf("plan %s: exit %d, a live alternative for a service range that does not move:\n%s", strings.Join(flags, " "), r.code, r.stdout)
		}
	}
}

// TestOutputDirThatTakesNoFile: a directory in which no file can be created (/proc, where even
// root gets ENOENT) is named as the output directory (exit 2), not by the temporary file's name.
func TestOutputDirThatTakesNoFile(t *testing.T) {
	r := run(t, "transform", copySample(t), "--out", "/proc/out.db", "--quiet")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "output directory /proc takes no new file (no such file or directory): choose another") || strings.Contains(r.stderr, ".tmp") {
		t.Errorf("transform --out /proc/out.db: exit %d, stderr %q", r.code, r.stderr)
	}
}

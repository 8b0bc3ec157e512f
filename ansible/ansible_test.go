package ansible_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/ansible"
	"github.com/snapshift/snapshift/bundle"
)

// fleet is a runbook of the shape rebuild writes (the block IDs and the
// "# on NODE" lines of a new-CA bundle) for cps control-plane nodes and
// workers workers, and the report.json it names.
func fleet(cps, workers int) (ansible.Input, []byte) {
	report := []byte(fmt.Sprintf(`{"apiVersion":"snapshift.io/v1alpha1","kind":"BundleReport","nodes":%d}`, cps))
	sum := sha256.Sum256(report)
	rb := &bundle.Runbook{APIVersion: bundle.APIVersion, Kind: bundle.RunbookKind, ReportSHA256: hex.EncodeToString(sum[:])}
	in := ansible.Input{Runbook: rb}
	var cpLines = func(f string) []string {
		var out []string
		for i := 1; i <= cps; i++ {
			out = append(out, fmt.Sprintf(f+"   # on cp%d", i, i))
		}
		return out
	}
	for i := 1; i <= cps; i++ {
		in.ControlPlane = append(in.ControlPlane, bundle.Node{Name: fmt.Sprintf("cp%d", i), EtcdMember: fmt.Sprintf("cp%d", i),
			AdvertiseAddress: fmt.Sprintf("127.0.1.%d", i), Dir: fmt.Sprintf("kubernetes/cp%d", i)})
	}
	var backup []string
	for i := 1; i <= workers; i++ {
		w := fmt.Sprintf("w%04d", i)
		in.Workers = append(in.Workers, ansible.Host{Name: w})
		backup = append(backup, "B=/var/lib/snapshift/backup/"+w+"-0123456789ab   # on "+w)
	}
	step := func(id, where, title string, blocks ...bundle.RunbookBlock) {
		s := bundle.RunbookStep{ID: id, Level: 2, Title: title, Where: where}
		for i := range blocks {
			s.Items = append(s.Items, bundle.RunbookItem{Block: &blocks[i]})
		}
		rb.Steps = append(rb.Steps, s)
	}
	block := func(id, where string, lines ...string) bundle.RunbookBlock {
		b := bundle.RunbookBlock{ID: id, Where: where}
		for _, l := range lines {
			b.Lines = append(b.Lines, bundle.NewRunbookLine(l))
		}
		return b
	}
	step("copy", bundle.WhereOperator, "Copy", block("copy.preflight", bundle.WhereControlPlane, cpLines("snapshift node apply --node cp%d --preflight-only")...))
	step("workers-stop", bundle.WhereWorkers, "Stop the workers", block("workers-stop.backup", bundle.WhereWorkers,
		append(backup, `mkdir -p "$B/etc"`, "systemctl stop kubelet")...))
	step("apply", bundle.WhereControlPlane, "Apply",
		block("apply.stop", bundle.WhereControlPlane, cpLines("snapshift node apply --node cp%d --stop-only")...),
		block("apply.start", bundle.WhereControlPlane, cpLines("snapshift node apply --node cp%d")...),
		block("apply.confirm", bundle.WhereControlPlane, cpLines("snapshift node confirm --node cp%d")...))
	step("kubectl", bundle.WhereOperator, "Point kubectl", block("kubectl.export", bundle.WhereOperator, "export KUBECONFIG=/bundle/kubernetes/cp1/admin.conf"))
	step("workers-rejoin", bundle.WhereWorkers, "Rejoin",
		block("workers-rejoin.wait", bundle.WhereKubectl, `kubectl wait node/w0001 --for=jsonpath='{.status.conditions[?(@.type=="Ready")].status}'=Unknown`),
		block("workers-rejoin.join", bundle.WhereWorkers, "kubeadm reset -f", "kubeadm join 127.0.1.1:6443 --token abcdef.0123456789abcdef"))
	rb.Steps[len(rb.Steps)-1].Gate = &bundle.RunbookGate{Text: "every node is Ready", Where: bundle.WhereKubectl, Timeout: "10m",
		Command: "kubectl wait node --all --for=condition=Ready --timeout=10m"}
	step("restart", bundle.WhereKubectl, "Restart", block("restart.run", bundle.WhereKubectl, "snapshift cluster restart --bundle /bundle"))
	step("check", bundle.WhereKubectl, "Check", block("check.run", bundle.WhereKubectl, "snapshift cluster check --bundle /bundle"))
	step("rollback", bundle.WhereControlPlane, "Rollback",
		block("rollback.control-plane", bundle.WhereControlPlane, cpLines("snapshift node rollback --node cp%d")...),
		block("rollback.workers", bundle.WhereWorkers, append(backup, "systemctl start kubelet")...),
		block("rollback.pods", bundle.WhereKubectl, "kubectl delete pod -A --field-selector spec.nodeName=w0001"))
	return in, report
}

// write renders in into bundle/ansible under a new directory with
// report.json beside it, and returns the ansible directory.
func write(t *testing.T, in ansible.Input, report []byte) string {
	t.Helper()
	b := t.TempDir()
	rj, err := json.MarshalIndent(in.Runbook, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rj)
	in.RunbookSHA256 = hex.EncodeToString(sum[:])
	files, err := ansible.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, bundle.ReportFile), report, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, bundle.RunbookJSONFile), rj, 0o600); err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		p := filepath.Join(b, ansible.Dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(b, ansible.Dir)
}

// playbook runs the real ansible-playbook (Debian's ansible-core) in dir.
func playbook(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("ansible-playbook")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ansible-playbook is missing: .ci/run installs Debian's ansible-core")
		}
		t.Skip("ansible-playbook is not installed (apt-get install ansible-core)")
	}
	cmd := exec.Command(bin, append([]string{"-i", "inventory.ini"}, args...)...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "ANSIBLE_LOCAL_TEMP="+filepath.Join(home, "tmp"), "ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestCheckSerial(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"20%", ""}, {"1", ""}, {"100%", ""}, {"1%", ""}, {"250", ""},
		{"0", "below 1"}, {"0%", "below 1"}, {"101%", "over 100%"}, {"ten", "not a number"}, {"", "not a number"}, {"-3", "below 1"}, {"5.5%", "not a number"},
	} {
		err := ansible.CheckSerial(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckSerial(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
	in, _ := fleet(1, 2)
	in.Serial = "0"
	if _, err := ansible.Render(in); err == nil || !strings.Contains(err.Error(), `batch size "0" is below 1`) {
		t.Errorf("Render with serial 0: %v", err)
	}
}

// TestFleetOf500: 3 control-plane nodes and 500 workers render playbooks
// that ansible-playbook accepts (--syntax-check), whose plays reach the
// hosts they should (--list-hosts: the workers' plays all 500, in the
// configured batches) and name the runbook's blocks (--list-tasks).
func TestFleetOf500(t *testing.T) {
	in, report := fleet(3, 500)
	in.Serial = "10%"
	dir := write(t, in, report)
	mig, err := os.ReadFile(filepath.Join(dir, "migrate.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(mig), "serial: '{{ snapshift_serial | default(''10%'') }}'"); n != 2 {
		t.Errorf("migrate.yml has %d worker plays in batches of 10%%, want 2:\n%s", n, mig)
	}
	for _, pb := range []string{"migrate.yml", "rollback.yml", "late-node.yml"} {
		if out, err := playbook(t, dir, "--syntax-check", pb); err != nil {
			t.Fatalf("%s --syntax-check: %v\n%s", pb, err, out)
		}
	}
	out, err := playbook(t, dir, "--list-hosts", "migrate.yml")
	if err != nil {
		t.Fatalf("--list-hosts: %v\n%s", err, out)
	}
	if n := len(regexp.MustCompile(`(?m)pattern: \['kube_node:!kube_control_plane'\]\n\s+hosts \(500\):`).FindAllString(out, -1)); n != 2 {
		t.Errorf("--list-hosts: %d worker plays reach 500 hosts, want 2:\n%.2000s", n, out)
	}
	if n := len(regexp.MustCompile(`(?m)pattern: \['kube_control_plane'\]\n\s+hosts \(3\):`).FindAllString(out, -1)); n != 3 {
		t.Errorf("--list-hosts: %d control-plane plays reach 3 hosts, want 3", n)
	}
	out, err = playbook(t, dir, "--list-tasks", "migrate.yml")
	if err != nil {
		t.Fatalf("--list-tasks: %v\n%s", err, out)
	}
	for _, id := range []string{"copy.preflight", "workers-stop.backup", "apply.stop", "apply.start", "rollback.control-plane", "workers-rejoin.wait",
		"workers-rejoin.join", "restart.run", "check.run", "apply.confirm"} {
		if !strings.Contains(out, "      "+id+": ") {
			t.Errorf("--list-tasks names no task of block %s", id)
		}
	}
	if i, j := strings.Index(out, "apply.stop: "), strings.Index(out, "apply.start: "); i < 0 || j < i {
		t.Errorf("apply.stop does not come before apply.start")
	}
	// Each worker's script holds its own backup line and no other's.
	s, err := os.ReadFile(filepath.Join(dir, "scripts", "workers-stop.backup", "w0042.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s), "w0042-0123456789ab") || strings.Contains(string(s), "w0043") || !strings.Contains(string(s), "systemctl stop kubelet") {
		t.Errorf("w0042's script:\n%s", s)
	}
}

// TestGuard: the playbooks' first play (tag guard), run for real on this machine,
// refuses a report.json that is not the runbook's and an inventory host
// the bundle has no files for, and passes the bundle's own.
func TestGuard(t *testing.T) {
	in, report := fleet(1, 2)
	dir := write(t, in, report)
	if out, err := playbook(t, dir, "--limit", "localhost", "--tags", "guard", "migrate.yml"); err != nil {
		t.Fatalf("the guard on the bundle's own report.json: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "..", bundle.ReportFile), append(report, ' '), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := playbook(t, dir, "--limit", "localhost", "--tags", "guard", "migrate.yml")
	if err == nil || !strings.Contains(out, "report.json beside this playbook is not the one runbook.json was made with") {
		t.Errorf("the guard on another report.json: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "..", bundle.ReportFile), report, 0o600); err != nil {
		t.Fatal(err)
	}
	inv := filepath.Join(dir, "inventory.ini")
	b, _ := os.ReadFile(inv)
	if err := os.WriteFile(inv, []byte(strings.Replace(string(b), "[kube_node]\n", "[kube_node]\nw9999\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = playbook(t, dir, "--limit", "localhost", "--tags", "guard", "migrate.yml")
	if err == nil || !strings.Contains(out, "the inventory names hosts the bundle has no files for: w9999") {
		t.Errorf("the guard on an inventory with an unknown host: %v\n%s", err, out)
	}
	if err := os.WriteFile(inv, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// A runbook.json edited by hand, then a script: each refused, named.
	rbPath := filepath.Join(dir, "..", bundle.RunbookJSONFile)
	rj, _ := os.ReadFile(rbPath)
	if err := os.WriteFile(rbPath, []byte(strings.Replace(string(rj), "--stop-only", "--stop-only --skip-health", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = playbook(t, dir, "--limit", "localhost", "--tags", "guard", "rollback.yml")
	if err == nil || !strings.Contains(out, "runbook.json beside this playbook is not the one it was rendered from") {
		t.Errorf("the guard on an edited runbook.json: %v\n%s", err, out)
	}
	if err := os.WriteFile(rbPath, rj, 0o600); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(dir, "scripts/apply.start/cp1.sh")
	if err := os.WriteFile(sc, []byte("#!/bin/bash\nsnapshift node apply --node cp1 --skip-health\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = playbook(t, dir, "--limit", "localhost", "--tags", "guard", "migrate.yml")
	if err == nil || !strings.Contains(out, "differ from what snapshift rendered (scripts/apply.start/cp1.sh: FAILED") {
		t.Errorf("the guard on an edited script: %v\n%s", err, out)
	}
}

// TestKubesprayInventory (issue 46): the operator's own kubespray
// inventory, whose kube_node also lists the control-plane nodes and which
// has kubespray's etcd and k8s_cluster groups, passes the guard, and the
// worker plays leave the control-plane nodes to the control-plane plays.
// The workers' gate runs before the restart.
func TestKubesprayInventory(t *testing.T) {
	in, report := fleet(3, 4)
	dir := write(t, in, report)
	inv := `[kube_control_plane]
cp1 ansible_host=127.0.1.1
cp2 ansible_host=127.0.1.2
cp3 ansible_host=127.0.1.3

[etcd]
cp1
cp2
cp3

[kube_node]
cp1
cp2
cp3
w0001 ansible_host=127.0.2.1
w0002 ansible_host=127.0.2.2
w0003 ansible_host=127.0.2.3
w0004 ansible_host=127.0.2.4

[k8s_cluster:children]
kube_control_plane
kube_node
`
	if err := os.WriteFile(filepath.Join(dir, "kubespray.ini"), []byte(inv), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := playbook(t, dir, "-i", "kubespray.ini", "--limit", "localhost", "--tags", "guard", "migrate.yml"); err != nil {
		t.Fatalf("the guard on kubespray's inventory: %v\n%s", err, out)
	}
	out, err := playbook(t, dir, "-i", "kubespray.ini", "--list-hosts", "migrate.yml")
	if err != nil {
		t.Fatalf("--list-hosts: %v\n%s", err, out)
	}
	plays := strings.Split(out, "play #")
	for _, p := range plays {
		if strings.Contains(p, "workers-stop") || strings.Contains(p, "kubeadm join") {
			if strings.Contains(p, "cp1") || !strings.Contains(p, "w0004") || !strings.Contains(p, "hosts (4)") {
				t.Errorf("a worker play runs on other hosts than the four workers:\n%s", p)
			}
		}
	}
	out, err = playbook(t, dir, "-i", "kubespray.ini", "--list-tasks", "migrate.yml")
	if err != nil {
		t.Fatalf("--list-tasks: %v\n%s", err, out)
	}
	gate, restart := strings.Index(out, "workers-rejoin.gate: every node is Ready"), strings.Index(out, "restart.run:")
	if gate < 0 || restart < gate {
		t.Errorf("the workers' gate is not listed before restart.run:\n%s", out)
	}
}

// BenchmarkRender: rendering grows linearly with the workers (files and
// bytes reported per run).
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{50, 500, 5000} {
		in, _ := fleet(3, n)
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var bytes, files int
			for b.Loop() {
				out, err := ansible.Render(in)
				if err != nil {
					b.Fatal(err)
				}
				bytes, files = 0, len(out)
				for _, v := range out {
					bytes += len(v)
				}
			}
			b.ReportMetric(float64(bytes), "bytes/bundle")
			b.ReportMetric(float64(files), "files/bundle")
		})
	}
}

// TestControlPlaneFailureRollsBackEvery: the control-plane play run for
// real, its three nodes on this machine (ansible_connection=local) and
// each block's lines harmless ones that log what ran: when apply.start
// fails on one node, every node rolls back and the play fails; when none
// fails, none rolls back. Under --check nothing of apply runs.
func TestControlPlaneFailureRollsBackEvery(t *testing.T) {
	logDir := t.TempDir()
	for _, tc := range []struct {
		name, failOn string
		check        bool
		want         []string
	}{
		{"all pass", "", false, []string{"stop cp1", "stop cp2", "stop cp3", "start cp1", "start cp2", "start cp3"}},
		{"cp2 fails", "cp2", false, []string{"stop cp1", "stop cp2", "stop cp3", "start cp1", "start cp3", "rollback cp1", "rollback cp2", "rollback cp3"}},
		{"check", "cp2", true, nil},
		// preflight refuses cp2 (copy.preflight): no node stops its old
		// control plane (the copy play is any_errors_fatal).
		{"cp2 refused", "cp2-preflight", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(logDir, strings.ReplaceAll(tc.name, " ", "-"))
			in, report := fleet(3, 0)
			for _, id := range []string{"copy.preflight", "apply.stop", "apply.start", "rollback.control-plane"} {
				b := in.Runbook.Block(id)
				if id == "copy.preflight" {
					for i := range b.Lines {
						if n := b.Lines[i].On; n+"-preflight" == tc.failOn {
							b.Lines[i] = bundle.NewRunbookLine("echo preflight-refused " + n + " >> " + log + "; false   # on " + n)
						} else if n != "" {
							b.Lines[i] = bundle.NewRunbookLine("true   # on " + n)
						}
					}
					continue
				}
				verb, _, _ := strings.Cut(strings.TrimPrefix(id, "apply."), ".")
				for i := range b.Lines {
					n := b.Lines[i].On
					line := fmt.Sprintf("echo %s %s >> %s", verb, n, log)
					if id == "apply.start" && n == tc.failOn {
						line = fmt.Sprintf("echo start-failed %s >> %s; false", n, log)
					}
					b.Lines[i] = bundle.NewRunbookLine(line + "   # on " + n)
				}
			}
			dir := write(t, in, report)
			inv := filepath.Join(dir, "inventory.ini")
			b, _ := os.ReadFile(inv)
			local := regexp.MustCompile(`(?m)^(cp\d) ansible_host=\S+$`).ReplaceAllString(string(b), "$1 ansible_connection=local")
			if err := os.WriteFile(inv, []byte(local), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--tags", "guard,copy.preflight,apply.stop,apply.start,rollback.control-plane", "migrate.yml"}
			if tc.check {
				args = append([]string{"--check"}, args...)
			}
			out, err := playbook(t, dir, args...)
			if (err != nil) != (tc.failOn != "" && !tc.check) {
				t.Fatalf("ansible-playbook: %v\n%s", err, out)
			}
			if strings.HasPrefix(tc.failOn, "cp") && !strings.HasSuffix(tc.failOn, "-preflight") && !tc.check && !strings.Contains(out, "every control-plane node was rolled back") {
				t.Errorf("the failed play does not say every node was rolled back:\n%s", out)
			}
			got, _ := os.ReadFile(log)
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(string(got)), "\n") {
				if l != "" && !strings.HasPrefix(l, "start-failed") && !strings.HasPrefix(l, "preflight-refused") {
					lines = append(lines, l)
				}
			}
			slices.Sort(lines)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(lines, want) {
				t.Errorf("ran %q, want %q\n%s", lines, want, out)
			}
		})
	}
}

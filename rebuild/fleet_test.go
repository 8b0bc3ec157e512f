package rebuild_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/rules"
)

// TestFleetOf500FromASnapshot (issue 46): a generated snapshot of a
// cluster with 500 worker Nodes besides the sample's is rebuilt; the
// report's scale plan counts them and the runbook brings the workers in by
// batches (issue 48 item 5); the bundle's inventory holds every worker,
// and the real ansible-playbook
// checks the playbooks' syntax, lists the 500-odd workers in each worker
// play (the control-plane nodes in none of them) and the tasks, with the
// batch size the rebuild file sets.
func TestFleetOf500FromASnapshot(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "fleet.db")
	res, err := gen.Generate(context.Background(), gen.Config{Path: snap, Keys: 5000, Seed: 46, WorkerNodes: 500})
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes < 500 {
		t.Fatalf("generated %d Nodes, want at least 500", res.Nodes)
	}
	out := filepath.Join(dir, "bundle")
	ms := members(t, 3)
	for i := range ms {
		ms[i].AdvertiseAddress = fmt.Sprintf("127.0.0.%d", i+1)
	}
	cfg := baseConfig(t, out, ms)
	cfg.Snapshot, cfg.Ansible.Serial = snap, "10%"
	rep, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	sc := rep.Plan.Scale
	if sc == nil || sc.Nodes != res.Nodes || sc.Nodes < rules.LargeClusterNodes || sc.DaemonSets == 0 || sc.Relisting != sc.Nodes*(1+sc.DaemonSets) || len(sc.Warnings) == 0 {
		t.Fatalf("report.json's scale plan %+v: want the %d generated Nodes, the DaemonSets, and the large-cluster warning", sc, res.Nodes)
	}
	md, err := os.ReadFile(filepath.Join(out, "RUNBOOK.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("**%d nodes: bring the workers in by batches of at most %d**", sc.Nodes, rebuild.KubeletBatch); !strings.Contains(string(md), want) {
		t.Errorf("RUNBOOK.md does not say %q", want)
	}
	if !strings.Contains(string(md), "runs this step in batches of `snapshift_serial` (10%)") {
		t.Errorf("RUNBOOK.md's batches do not name the playbook's batch size, 10%%")
	}
	if ansiblePlaybook(t, t.TempDir()) == nil {
		t.Skip("ansible-playbook is not installed (apt-get install ansible-core)")
	}
	inv, err := os.ReadFile(filepath.Join(out, "ansible/inventory.ini"))
	if err != nil {
		t.Fatal(err)
	}
	workers := regexp.MustCompile(`(?m)^worker-\d{4}$`).FindAllString(string(inv), -1)
	if len(workers) != 500 {
		t.Errorf("inventory.ini lists %d generated workers, want 500", len(workers))
	}
	mig, _ := os.ReadFile(filepath.Join(out, "ansible/migrate.yml"))
	if n := strings.Count(string(mig), "serial: '{{ snapshift_serial | default(''10%'') }}'"); n != 2 {
		t.Errorf("migrate.yml has %d worker plays in batches of 10%%, want 2", n)
	}
	run := ansiblePlaybook(t, out)
	pb := func(args ...string) string {
		b, err := run(args...)
		if err != nil {
			t.Fatalf("ansible-playbook %s: %v\n%.3000s", strings.Join(args, " "), err, b)
		}
		return b
	}
	for _, p := range []string{"migrate.yml", "rollback.yml", "late-node.yml"} {
		pb("--syntax-check", p)
	}
	hosts := pb("--list-hosts", "migrate.yml")
	plays := regexp.MustCompile(`(?m)pattern: \['kube_node:!kube_control_plane'\]\n\s+hosts \((\d+)\):`).FindAllStringSubmatch(hosts, -1)
	if len(plays) != 2 {
		t.Fatalf("--list-hosts: %d worker plays, want 2:\n%.2000s", len(plays), hosts)
	}
	for _, p := range plays {
		if n, _ := strconv.Atoi(p[1]); n < 500 {
			t.Errorf("a worker play reaches %s hosts, want at least 500", p[1])
		}
	}
	if tasks := pb("--list-tasks", "migrate.yml"); !strings.Contains(tasks, "workers-rejoin.join") || !strings.Contains(tasks, "workers-rejoin.gate: every node") {
		t.Errorf("--list-tasks does not list the rejoin and its gate:\n%.3000s", tasks)
	}
}

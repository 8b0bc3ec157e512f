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
)

// TestFleetOf500FromASnapshot (issue 46): a generated snapshot of a
// cluster with 500 worker Nodes besides the sample's is rebuilt; the
// bundle's inventory holds every worker, and the real ansible-playbook
// checks the playbooks' syntax, lists the 500-odd workers in each worker
// play (the control-plane nodes in none of them) and the tasks, with the
// batch size the rebuild file sets.
func TestFleetOf500FromASnapshot(t *testing.T) {
	if ansiblePlaybook(t, t.TempDir()) == nil {
		t.Skip("ansible-playbook is not installed (apt-get install ansible-core)")
	}
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
	_, err = rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
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

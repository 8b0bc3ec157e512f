// Package ansible renders a bundle's window (bundle.Runbook, runbook.json)
// as an Ansible inventory and playbooks that carry it out across the fleet
// from the operator's machine: migrate.yml, rollback.yml and late-node.yml.
// snapshift still does each node's work; a playbook copies the bundle,
// runs each runbook block where runbook.json says (every task names the
// block ID it runs), and waits where the runbook waits. Only ansible-core's
// built-in modules are used, so nothing needs a collection.
//
// The control-plane nodes apply at once (their etcd members were restored
// together) and a failure on any of them rolls every one back; the workers
// go in batches (serial, 20% by default as kubespray does, settable at
// render time and with -e snapshift_serial=N% on the command line).
package ansible

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/bundle"
)

// Dir is the bundle's directory of the rendered files.
const Dir = "ansible"

// DefaultSerial is the workers' batch size, kubespray's default.
const DefaultSerial = "20%"

// Host is one inventory host: the node's name and the address Ansible
// reaches it at (empty: the name itself, resolved by SSH).
type Host struct {
	Name    string
	Address string
}

// Input is what the playbooks are rendered from.
type Input struct {
	Runbook *bundle.Runbook
	// ControlPlane are the bundle's control-plane nodes (report.json's
	// nodes), with their etcd member's directory name and node directory.
	ControlPlane []bundle.Node
	// Workers are the nodes with a kubelet that are no control-plane node.
	Workers []Host
	// Serial is the workers' batch size: a percentage (1% to 100%) or a
	// count of at least 1. Default DefaultSerial.
	Serial string
	// RunbookSHA256 is the sha256 of the runbook.json file the playbooks
	// are rendered from: the guard refuses another one.
	RunbookSHA256 string
}

// CheckSerial says what is wrong with a batch size, in one sentence.
func CheckSerial(s string) error {
	num, pct := strings.CutSuffix(s, "%")
	n, err := strconv.Atoi(num)
	switch {
	case err != nil:
		return fmt.Errorf("the workers' batch size %q is not a number: give a count like 10 or a percentage like 20%%", s)
	case n < 1:
		return fmt.Errorf("the workers' batch size %q is below 1: give at least 1 (or 1%%)", s)
	case pct && n > 100:
		return fmt.Errorf("the workers' batch size %q is over 100%%: give at most 100%%", s)
	}
	return nil
}

// Render returns every file of the ansible directory by its path in it.
func Render(in Input) (map[string][]byte, error) {
	if in.Serial == "" {
		in.Serial = DefaultSerial
	}
	if err := CheckSerial(in.Serial); err != nil {
		return nil, err
	}
	r := &renderer{in: in, files: map[string][]byte{}}
	r.files["inventory.ini"] = []byte(r.inventory())
	for _, pb := range []struct {
		name  string
		plays func() ([]play, error)
	}{{"migrate.yml", r.migrate}, {"rollback.yml", r.rollback}, {"late-node.yml", r.lateNode}} {
		plays, err := pb.plays()
		if err != nil {
			return nil, err
		}
		b, err := yaml.Marshal(plays)
		if err != nil {
			return nil, err
		}
		r.files[pb.name] = append([]byte("# "+pb.name+": rendered by snapshift from runbook.json (report.json sha256 "+in.Runbook.ReportSHA256+"); do not edit\n"), b...)
	}
	var names []string
	for name := range r.files {
		if name != "inventory.ini" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var sums strings.Builder
	for _, name := range names {
		sum := sha256.Sum256(r.files[name])
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	r.files[SumsFile] = []byte(sums.String())
	return r.files, nil
}

type renderer struct {
	in    Input
	files map[string][]byte
}

// play and task are Ansible's, as YAML maps (yaml.Marshal sorts the keys:
// Ansible reads them in any order).
type (
	play = map[string]any
	task = map[string]any
)

// Groups of the inventory, kubespray's names.
const (
	groupControlPlane = "kube_control_plane"
	groupWorkers      = "kube_node"
	// workerHosts is the pattern the worker plays run on: kubespray's
	// inventories often list the control-plane nodes in kube_node too,
	// and those are applied by the control-plane plays, not rejoined.
	workerHosts = groupWorkers + ":!" + groupControlPlane
)

// checkSums is what the guard runs, with the Python that runs
// ansible-playbook (every controller has it; coreutils' sha256sum is not
// on every operator's machine): each file of SumsFile whose sha256 differs,
// or that is missing, as "NAME: FAILED" or "NAME: missing", exit 1.
const checkSums = `import hashlib, sys
bad = []
for line in open(sys.argv[1]).read().splitlines():
    want, name = line.split("  ", 1)
    try:
        got = hashlib.sha256(open(name, "rb").read()).hexdigest()
    except OSError:
        bad.append(name + ": missing")
        continue
    if got != want:
        bad.append(name + ": FAILED")
print("\n".join(bad))
sys.exit(1 if bad else 0)`

// SumsFile lists the sha256 of every file the playbooks run (the
// playbooks and their scripts, not the inventory, which is the
// operator's to edit), as sha256sum writes them: the guard checks them.
const SumsFile = "SHA256SUMS"

func (r *renderer) inventory() string {
	var b strings.Builder
	b.WriteString("# The bundle's nodes, by the names report.json and the snapshot give them. Set ansible_host\n")
	b.WriteString("# where a name does not resolve from this machine, or pass your own inventory with the same\n")
	b.WriteString("# host names (kubespray's kube_control_plane and kube_node groups).\n")
	fmt.Fprintf(&b, "[%s]\n", groupControlPlane)
	for _, n := range r.in.ControlPlane {
		fmt.Fprintf(&b, "%s ansible_host=%s\n", n.Name, n.AdvertiseAddress)
	}
	fmt.Fprintf(&b, "\n[%s]\n", groupWorkers)
	for _, w := range r.in.Workers {
		if w.Address != "" {
			fmt.Fprintf(&b, "%s ansible_host=%s\n", w.Name, w.Address)
		} else {
			fmt.Fprintf(&b, "%s\n", w.Name)
		}
	}
	b.WriteString("\n# The operator's machine: the bundle's checks and the kubectl steps run here.\n[snapshift_operator]\nlocalhost ansible_connection=local\n")
	b.WriteString("\n[all:vars]\nansible_user=root\n")
	return b.String()
}

// hostsOf are the inventory names a block runs on.
func (r *renderer) hostsOf(where string) []string {
	var out []string
	switch where {
	case bundle.WhereControlPlane:
		for _, n := range r.in.ControlPlane {
			out = append(out, n.Name)
		}
	case bundle.WhereWorkers:
		for _, w := range r.in.Workers {
			out = append(out, w.Name)
		}
	default:
		out = []string{"localhost"}
	}
	return out
}

// script writes block id's script for every host it runs on (its lines
// without "# on", and the host's own) and returns the task that runs it.
func (r *renderer) script(id string, extra task) (task, error) {
	blk := r.in.Runbook.Block(id)
	if blk == nil {
		return nil, fmt.Errorf("runbook.json has no block %s", id)
	}
	perHost := blk.Where == bundle.WhereControlPlane || blk.Where == bundle.WhereWorkers
	// A host's script is the block's lines for every host and its own, in
	// the block's order: the indexes of both, merged (linear in the fleet).
	var common []int
	own := map[string][]int{}
	for i, l := range blk.Lines {
		if l.On == "" || !perHost {
			common = append(common, i)
		} else {
			own[l.On] = append(own[l.On], i)
		}
	}
	for _, h := range r.hostsOf(blk.Where) {
		var b strings.Builder
		b.WriteString("#!/bin/bash\n# runbook.json block " + id + " on " + h + "\nset -euo pipefail\n")
		c, o := common, own[h]
		for len(c) > 0 || len(o) > 0 {
			var i int
			if len(o) == 0 || (len(c) > 0 && c[0] < o[0]) {
				i, c = c[0], c[1:]
			} else {
				i, o = o[0], o[1:]
			}
			b.WriteString(blk.Lines[i].Text + "\n")
		}
		r.files[path.Join("scripts", id, h+".sh")] = []byte(b.String())
	}
	t := task{"name": id + ": " + r.stepTitle(id), "ansible.builtin.script": "scripts/" + id + "/{{ inventory_hostname }}.sh", "tags": []string{id}}
	if blk.Where != bundle.WhereControlPlane && blk.Where != bundle.WhereWorkers {
		t["ansible.builtin.script"] = "scripts/" + id + "/localhost.sh"
	}
	for k, v := range extra {
		t[k] = v
	}
	return t, nil
}

func (r *renderer) stepTitle(blockID string) string {
	id, _, _ := strings.Cut(blockID, ".")
	if s := r.in.Runbook.Step(id); s != nil {
		return s.Title
	}
	return id
}

// kubectlHosts is where the runbook's kubectl runs: the node block
// kubectl.export's line names, else the operator's machine.
func (r *renderer) kubectlHosts() (hosts, connection string) {
	if b := r.in.Runbook.Block("kubectl.export"); b != nil {
		for _, l := range b.Lines {
			if l.On != "" {
				return l.On, ""
			}
		}
	}
	return "localhost", "local"
}

// kubectlPlay runs blocks where kubectl points, with its KUBECONFIG.
func (r *renderer) kubectlPlay(name string, ids ...string) (play, error) {
	hosts, conn := r.kubectlHosts()
	env := r.kubectlEnv()
	var tasks []task
	for _, id := range ids {
		t, err := r.scriptOn(id, hosts)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	p := play{"name": name, "hosts": hosts, "gather_facts": false, "environment": env, "tasks": tasks}
	if conn != "" {
		p["connection"] = conn
	}
	return p, nil
}

// scriptOn is script for a block that runs on one given host (where
// kubectl points).
func (r *renderer) scriptOn(id, host string) (task, error) {
	blk := r.in.Runbook.Block(id)
	if blk == nil {
		return nil, fmt.Errorf("runbook.json has no block %s", id)
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n# runbook.json block " + id + "\nset -euo pipefail\n")
	for _, l := range blk.Lines {
		b.WriteString(l.Text + "\n")
	}
	r.files[path.Join("scripts", id, "run.sh")] = []byte(b.String())
	return task{"name": id + ": " + r.stepTitle(id), "ansible.builtin.script": "scripts/" + id + "/run.sh", "tags": []string{id}}, nil
}

// gateTasks wait for the gates of the steps given (those the runbook
// has), as the runbook says to before the next step.
func (r *renderer) gateTasks(ids ...string) []task {
	var out []task
	for _, id := range ids {
		s := r.in.Runbook.Step(id)
		if s == nil || s.Gate == nil {
			continue
		}
		out = append(out, task{"name": id + ".gate: " + s.Gate.Text, "ansible.builtin.command": map[string]any{"cmd": s.Gate.Command},
			"changed_when": false, "tags": []string{id + ".gate"}})
	}
	return out
}

// guard is every playbook's first play: report.json beside the playbooks'
// bundle is the one runbook.json was made with, and every inventory host
// is a node of the bundle.
func (r *renderer) guard() play {
	known := []string{"localhost"}
	for _, n := range r.in.ControlPlane {
		known = append(known, n.Name)
	}
	for _, w := range r.in.Workers {
		known = append(known, w.Name)
	}
	sort.Strings(known)
	return play{"name": "the bundle and the inventory are this runbook's", "hosts": "localhost", "connection": "local", "gather_facts": false,
		"tags": []string{"always", "guard"},
		"tasks": []task{
			{"name": "guard: report.json", "ansible.builtin.stat": map[string]any{"path": "{{ playbook_dir }}/../" + bundle.ReportFile, "checksum_algorithm": "sha256"},
				"register": "snapshift_report"},
			{"name": "guard: report.json is the one runbook.json was made with", "ansible.builtin.assert": map[string]any{
				"that":     []string{"snapshift_report.stat.exists", "snapshift_report.stat.checksum == '" + r.in.Runbook.ReportSHA256 + "'"},
				"fail_msg": "report.json beside this playbook is not the one runbook.json was made with (sha256 " + r.in.Runbook.ReportSHA256 + "): render the playbooks from this bundle again (snapshift rebuild)"}},
			{"name": "guard: runbook.json", "ansible.builtin.stat": map[string]any{"path": "{{ playbook_dir }}/../" + bundle.RunbookJSONFile, "checksum_algorithm": "sha256"},
				"register": "snapshift_runbook"},
			{"name": "guard: runbook.json is the one these playbooks were rendered from", "ansible.builtin.assert": map[string]any{
				"that":     []string{"snapshift_runbook.stat.exists", "snapshift_runbook.stat.checksum == '" + r.in.RunbookSHA256 + "'"},
				"fail_msg": "runbook.json beside this playbook is not the one it was rendered from (sha256 " + r.in.RunbookSHA256 + "): it was edited or replaced; run snapshift rebuild again"}},
			{"name": "guard: the playbooks and scripts", "ansible.builtin.command": map[string]any{"argv": []string{"{{ ansible_playbook_python }}", "-c", checkSums, SumsFile}, "chdir": "{{ playbook_dir }}"},
				"register": "snapshift_sums", "failed_when": false, "changed_when": false, "check_mode": false},
			{"name": "guard: the playbooks and scripts are the ones snapshift rendered", "ansible.builtin.assert": map[string]any{
				"that":     []string{"snapshift_sums.rc == 0"},
				"fail_msg": "files of {{ playbook_dir }} differ from what snapshift rendered ({{ (snapshift_sums.stdout_lines + snapshift_sums.stderr_lines) | join('; ') }}): run snapshift rebuild again rather than edit them"}},
			{"name": "guard: every inventory host is a node of the bundle", "ansible.builtin.assert": map[string]any{
				"that":     []string{"groups['all'] | difference(" + jsonList(known) + ") | length == 0"},
				"fail_msg": "the inventory names hosts the bundle has no files for: {{ groups['all'] | difference(" + jsonList(known) + ") | join(', ') }}"}},
		}}
}

func jsonList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// serial is the workers' batch size, overridable with -e snapshift_serial.
func (r *renderer) serial() string {
	return "{{ snapshift_serial | default('" + r.in.Serial + "') }}"
}

// copyPlay copies each control-plane node's part of the bundle and the
// snapshift binary, as block copy.bundle's scp lines do, then runs the
// preflight (block copy.preflight, also under --check).
func (r *renderer) copyPlay() (play, error) {
	nb := bundle.NodeBundleDir
	members := map[string]string{}
	dirs := map[string]string{}
	for _, n := range r.in.ControlPlane {
		members[n.Name], dirs[n.Name] = n.EtcdMember, path.Base(n.Dir)
	}
	pre, err := r.script("copy.preflight", task{"check_mode": false})
	if err != nil {
		return nil, err
	}
	// any_errors_fatal: a control-plane node that cannot take its part or
	// that preflight refuses stops the window on every node before any
	// change. Without it Ansible drops only that host, and the others would
	// go on to restore a cluster without it while it kept running the old one.
	return play{"name": "copy: each control-plane node's part of the bundle", "hosts": groupControlPlane, "gather_facts": false,
		"any_errors_fatal": true,
		"vars":             map[string]any{"snapshift_members": members, "snapshift_dirs": dirs},
		"tasks": []task{
			{"name": "copy.bundle: the node's previous bundle removed", "ansible.builtin.file": map[string]any{"path": "{{ item }}", "state": "absent"},
				"loop": []string{nb + "/" + bundle.KubeDir, nb + "/" + bundle.EtcdDir}},
			{"name": "copy.bundle: directories", "ansible.builtin.file": map[string]any{"path": "{{ item }}", "state": "directory", "mode": "0700"},
				"loop": []string{nb + "/" + bundle.KubeDir, nb + "/" + bundle.EtcdDir}},
			{"name": "copy.bundle: report.json", "ansible.builtin.copy": map[string]any{"src": "{{ playbook_dir }}/../" + bundle.ReportFile, "dest": nb + "/", "mode": "0600"}},
			{"name": "copy.bundle: runbook.json", "ansible.builtin.copy": map[string]any{"src": "{{ playbook_dir }}/../" + bundle.RunbookJSONFile, "dest": nb + "/", "mode": "0600"}},
			{"name": "copy.bundle: the node's kubernetes directory", "ansible.builtin.copy": map[string]any{
				"src": "{{ playbook_dir }}/../" + bundle.KubeDir + "/{{ snapshift_dirs[inventory_hostname] }}", "dest": nb + "/" + bundle.KubeDir + "/", "mode": "preserve"}},
			{"name": "copy.bundle: the node's etcd member", "ansible.builtin.copy": map[string]any{
				"src": "{{ playbook_dir }}/../" + bundle.EtcdDir + "/{{ snapshift_members[inventory_hostname] }}", "dest": nb + "/" + bundle.EtcdDir + "/", "mode": "preserve"}},
			{"name": "copy.bundle: snapshift", "ansible.builtin.copy": map[string]any{"src": "{{ snapshift_binary | default(lookup('ansible.builtin.pipe', 'command -v snapshift')) }}",
				"dest": "/usr/local/bin/snapshift", "mode": "0755"}},
			pre,
		}}, nil
}

// controlPlaneApply is the two phases on every control-plane node at once;
// if any node fails, every one rolls back, and the play fails.
func (r *renderer) controlPlaneApply() (play, error) {
	stop, err := r.script("apply.stop", task{"register": "snapshift_stop", "failed_when": false})
	if err != nil {
		return nil, err
	}
	// A phase failed on some node: an rc other than 0 among the nodes that
	// ran it (a task skipped in --check has none).
	failedIn := func(v string) string {
		return "(ansible_play_hosts_all | map('extract', hostvars) | selectattr('" + v + "', 'defined') | map(attribute='" + v + "') | " +
			"selectattr('rc', 'defined') | map(attribute='rc') | select('ne', 0) | list | length > 0)"
	}
	start, err := r.script("apply.start", task{"register": "snapshift_start", "failed_when": false, "when": "not " + failedIn("snapshift_stop")})
	if err != nil {
		return nil, err
	}
	failed := failedIn("snapshift_stop") + " or " + failedIn("snapshift_start")
	back, err := r.script("rollback.control-plane", task{"when": failed})
	if err != nil {
		return nil, err
	}
	back["name"] = "rollback.control-plane: one of the applies failed, every control-plane node rolls back"
	back["tags"] = []string{"apply.stop", "apply.start", "rollback.control-plane"}
	return play{"name": "apply: stop every old member, then start the restored ones (all control-plane nodes at once)",
		"hosts": groupControlPlane, "gather_facts": false, "tasks": []task{stop, start, back,
			{"name": "apply: the control plane was rolled back", "ansible.builtin.fail": map[string]any{
				"msg": "node apply failed on a control-plane node: every control-plane node was rolled back; read each node's output above"},
				"when": failed, "tags": []string{"always"}}}}, nil
}

// workersPlay runs blocks on the workers, in batches.
func (r *renderer) workersPlay(name string, ids ...string) (play, error) {
	var tasks []task
	for _, id := range ids {
		t, err := r.script(id, nil)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return play{"name": name, "hosts": workerHosts, "gather_facts": false, "serial": r.serial(), "tasks": tasks}, nil
}

// migrate is the window: the runbook's steps by block ID.
func (r *renderer) migrate() ([]play, error) {
	plays := []play{r.guard()}
	add := func(p play, err error) error {
		if err == nil {
			plays = append(plays, p)
		}
		return err
	}
	rb := r.in.Runbook
	steps := []func() error{
		func() error { return add(r.copyPlay()) },
		func() error {
			return add(r.workersPlay("workers-stop: back up and stop the kubelet on every worker", "workers-stop.backup"))
		},
		func() error { return add(r.controlPlaneApply()) },
	}
	if rb.Block("workers-rejoin.join") != nil {
		steps = append(steps, func() error {
			return add(r.kubectlPlay("workers-rejoin: every worker NotReady", "workers-rejoin.wait"))
		},
			func() error {
				return add(r.workersPlay("workers-rejoin: kubeadm join, in batches", "workers-rejoin.join"))
			})
	} else if rb.Block("workers-start.kubelet") != nil {
		steps = append(steps, func() error {
			return add(r.workersPlay("workers-start: the kubelet, in batches", "workers-start.kubelet"))
		})
	}
	steps = append(steps, func() error {
		p, err := r.kubectlPlay("restart and check", "restart.run", "check.run")
		if err == nil {
			p["tasks"] = append(r.gateTasks("workers-rejoin", "workers-start"), p["tasks"].([]task)...)
		}
		return add(p, err)
	},
		func() error {
			t, err := r.script("apply.confirm", nil)
			return add(play{"name": "apply.confirm: the checks passed", "hosts": groupControlPlane, "gather_facts": false, "tasks": []task{t}}, err)
		})
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	return dropEmptyWorkers(plays, r.in.Workers), nil
}

// rollback is section "Rollback": every control-plane node at once, the
// workers in batches, then their pods.
func (r *renderer) rollback() ([]play, error) {
	cp, err := r.script("rollback.control-plane", nil)
	if err != nil {
		return nil, err
	}
	plays := []play{r.guard(), {"name": "rollback.control-plane: every control-plane node at once", "hosts": groupControlPlane, "gather_facts": false,
		"any_errors_fatal": true, "tasks": []task{cp}}}
	if r.in.Runbook.Block("rollback.workers") != nil {
		p, err := r.workersPlay("rollback.workers: in batches", "rollback.workers")
		if err != nil {
			return nil, err
		}
		plays = append(plays, p)
	}
	if r.in.Runbook.Block("rollback.pods") != nil {
		t, err := r.scriptOn("rollback.pods", r.in.ControlPlane[0].Name)
		if err != nil {
			return nil, err
		}
		plays = append(plays, play{"name": "rollback.pods: the pods that lost their CNI state, with the old cluster's kubeconfig", "hosts": r.in.ControlPlane[0].Name,
			"gather_facts": false, "environment": map[string]string{"KUBECONFIG": "/etc/kubernetes/admin.conf"}, "tasks": []task{t}})
	}
	return dropEmptyWorkers(plays, r.in.Workers), nil
}

// lateNode brings in a worker that was down during the window (run with
// -l NODE): its worker steps, as the window ran them on the others.
func (r *renderer) lateNode() ([]play, error) {
	ids := []string{"workers-stop.backup"}
	if r.in.Runbook.Block("workers-rejoin.join") != nil {
		ids = append(ids, "workers-rejoin.join")
	} else if r.in.Runbook.Block("workers-start.kubelet") != nil {
		ids = append(ids, "workers-start.kubelet")
	}
	p, err := r.workersPlay("late node: the worker steps on a worker that was down during the window (run with -l NODE)", ids...)
	if err != nil {
		return nil, err
	}
	if t, ok := r.lateNodeKubectl("faults.late-node"); ok {
		p["tasks"] = append(p["tasks"].([]task), t)
	}
	return dropEmptyWorkers([]play{r.guard(), p}, r.in.Workers), nil
}

// lateNodeKubectl is the task that runs a kubectl block's lines for the
// worker at hand (those without "# on", and its own) where kubectl points,
// delegated there (a -l NODE run limits the plays to NODE): one script per
// worker.
func (r *renderer) lateNodeKubectl(id string) (task, bool) {
	blk := r.in.Runbook.Block(id)
	if blk == nil {
		return nil, false
	}
	for _, w := range r.in.Workers {
		var b strings.Builder
		b.WriteString("#!/bin/bash\n# runbook.json block " + id + " for " + w.Name + "\nset -euo pipefail\n")
		for _, l := range blk.Lines {
			if l.On == "" || l.On == w.Name {
				b.WriteString(l.Text + "\n")
			}
		}
		r.files[path.Join("scripts", id, w.Name+".sh")] = []byte(b.String())
	}
	hosts, _ := r.kubectlHosts()
	t := task{"name": id + ": " + r.stepTitle(id) + " (this worker's line, where kubectl points)",
		"ansible.builtin.script": "scripts/" + id + "/{{ inventory_hostname }}.sh", "delegate_to": hosts, "tags": []string{id},
		"environment": r.kubectlEnv()}
	return t, true
}

// kubectlEnv is the KUBECONFIG block kubectl.export's line exports.
func (r *renderer) kubectlEnv() map[string]string {
	env := map[string]string{}
	if b := r.in.Runbook.Block("kubectl.export"); b != nil && len(b.Lines) > 0 {
		line, _, _ := strings.Cut(b.Lines[0].Text, "#")
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export KUBECONFIG="); ok {
			env["KUBECONFIG"] = v
		}
	}
	return env
}

// dropEmptyWorkers leaves out the worker plays when there is no worker.
func dropEmptyWorkers(plays []play, workers []Host) []play {
	if len(workers) > 0 {
		return plays
	}
	return slices.DeleteFunc(plays, func(p play) bool { return p["hosts"] == workerHosts })
}

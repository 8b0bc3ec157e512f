package rebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapshift/snapshift/ansible"
	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/restart"
	"github.com/snapshift/snapshift/rules"
)

// writeRunbook writes report.json and RUNBOOK.md: the order of the whole
// operation across the nodes, with this cluster's real names and paths.
// RUNBOOK.md holds the bootstrap token's secret (needed to join), so it is
// 0600 like the keys.
func (r *run) writeRunbook(context.Context) error {
	r.relocate()
	for _, n := range r.cfg.Nodes() {
		os.Remove(r.nodePath(n, "manifests-backup")) // only if empty: nothing was replaced
	}
	if err := r.provenance(); err != nil {
		return err
	}
	if err := r.operation(); err != nil {
		return err
	}
	if err := r.writeInstaller(); err != nil {
		return err
	}
	if err := writeJSONFile(r.path(bundle.ReportFile), r.report); err != nil {
		return err
	}
	rj, err := os.ReadFile(r.path(bundle.ReportFile))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(rj)
	b := runbook{reportSum: hex.EncodeToString(sum[:])}
	b.doc = bundle.Runbook{APIVersion: bundle.APIVersion, Kind: bundle.RunbookKind, ReportSHA256: b.reportSum}
	r.runbookHeader(&b)
	r.runbookChanges(&b)
	r.runbookPrepare(&b)
	r.runbookStopWorkers(&b)
	r.runbookEndpoint(&b)
	r.runbookApply(&b)
	r.runbookKubelets(&b)
	r.runbookRestart(&b)
	r.runbookFollowUp(&b)
	r.runbookRollback(&b)
	r.runbookFaults(&b)
	b.doc.Digest = bundle.RunbookDigest(&b.doc)
	if err := writeJSONFile(r.path(bundle.RunbookJSONFile), &b.doc); err != nil {
		return err
	}
	if err := r.writeAnsible(&b.doc); err != nil {
		return err
	}
	return os.WriteFile(r.path(bundle.RunbookFile), []byte(b.doc.Markdown()), 0o600)
}

// runbook is the window being written (bundle.Runbook, runbook.json):
// steps are numbered as they are written, so the numbers have no gaps
// whatever is left out. RUNBOOK.md is its Markdown.
type runbook struct {
	doc bundle.Runbook
	n   int
	// reportSum is report.json's sha256 (hex): `node apply` names its
	// backup directory after it.
	reportSum string
}

// backupDir is where `snapshift node apply` backs node up, and where the
// runbook's worker steps back the workers up (bundle.BackupDir).
func (b *runbook) backupDir(node string) string { return bundle.BackupDir(node, b.reportSum) }

// cur is the step being written.
func (b *runbook) cur() *bundle.RunbookStep { return &b.doc.Steps[len(b.doc.Steps)-1] }

// w writes one line of prose.
func (b *runbook) w(format string, args ...any) {
	t := fmt.Sprintf(format, args...)
	b.cur().Items = append(b.cur().Items, bundle.RunbookItem{Text: &t})
}

// title starts the document: its level-1 heading.
func (b *runbook) title(id, title string) {
	b.doc.Steps = append(b.doc.Steps, bundle.RunbookStep{ID: id, Level: 1, Title: title, Where: bundle.WhereOperator})
}

// step starts the next numbered step; its blocks run where says.
func (b *runbook) step(id, where, format string, args ...any) *bundle.RunbookStep {
	b.n++
	b.doc.Steps = append(b.doc.Steps, bundle.RunbookStep{ID: id, Number: b.n, Level: 2, Title: fmt.Sprintf(format, args...), Where: where})
	return b.cur()
}

// section starts an unnumbered section.
func (b *runbook) section(id, where, title string) *bundle.RunbookStep {
	b.doc.Steps = append(b.doc.Steps, bundle.RunbookStep{ID: id, Level: 2, Title: title, Where: where})
	return b.cur()
}

// shAs writes a shell block named name (its ID "<step>.<name>"), run
// where says (empty: where the step says).
func (b *runbook) shAs(name, where string, lines ...string) {
	s := b.cur()
	if where == "" {
		where = s.Where
	}
	blk := &bundle.RunbookBlock{ID: s.ID + "." + name, Where: where}
	for _, l := range lines {
		blk.Lines = append(blk.Lines, bundle.NewRunbookLine(l))
	}
	s.Items = append(s.Items, bundle.RunbookItem{Block: blk})
}

// runbookHeader names the bundle's maker and inputs (provenance) and the
// one warning that cannot wait: writes after the snapshot are lost.
func (r *run) runbookHeader(b *runbook) {
	p := r.report.Provenance
	b.title("header", "Rebuild runbook")
	b.w("")
	b.w("- Generated %s by snapshift %s (commit %s).", r.opts.Now().UTC().Format("2006-01-02 15:04 MST"), p.Snapshift.Version, orUnknown(p.Snapshift.Commit))
	if p.ConfigFile != "" {
		b.w("- Configuration `%s` (sha256 %s).", p.ConfigFile, p.ConfigSHA256)
	}
	b.w("- Input snapshot `%s` (sha256 %s as `sha256sum` prints it, revision %d).", p.Input, p.InputSHA256, r.report.Transform.Input.CurrentRevision)
	b.w("- Bundle `%s`; `report.json` holds the sha256 of every file, which `snapshift node apply` checks first.", r.cfg.Output)
	b.w("")
	if r.cfg.Recovery {
		r.runbookRecoveryHeader(b)
		return
	}
	b.w("**Everything written to the cluster after that snapshot is lost** when the nodes apply this bundle. For a planned")
	b.w("migration, stop every kube-apiserver before the snapshot. On every control-plane node, copy the manifests directory")
	b.w("first (`manifests.source` names that copy: `rebuild` reads `kube-apiserver.yaml` there, and the copy is how you start the")
	b.w("apiserver again if you stop here), then take `kube-apiserver.yaml` out of the directory the kubelet watches, and wait")
	b.w("until the apiserver has exited (it keeps running for its grace period):")
	b.w("")
	b.shAs("before-snapshot", bundle.WhereControlPlane,
		fmt.Sprintf("[ -e %s ] || cp -a /etc/kubernetes/manifests %s   # a copy from an earlier attempt is kept", bundle.ManifestsBefore, bundle.ManifestsBefore),
		"rm -f /etc/kubernetes/manifests/kube-apiserver.yaml   # its copy is in manifests.before-snapshift",
		"while [ -n \"$(crictl ps --name kube-apiserver -q)\" ]; do sleep 2; done")
	b.w("")
	b.w("The block can run again; a `manifests.before-snapshift` left by an earlier attempt (rolled back) is kept, as `node rollback`")
	b.w("puts `kube-apiserver.yaml` back from it: if the manifests changed since, move the old copy away first.")
	b.w("")
	b.w("Then take the snapshot on one of them (`etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt")
	b.w("--cert /etc/kubernetes/pki/etcd/server.crt --key /etc/kubernetes/pki/etcd/server.key snapshot save /backup/etcd.db`)")
	b.w("and run `snapshift rebuild` with `manifests.source: %s`.", bundle.ManifestsBefore)
	b.w("")
}

// runbookRecoveryHeader is the header of a recovery (the rebuild file's
// recovery): the control plane is gone, and the snapshot is the database of
// a member that survived, copied while its etcd was not running.
func (r *run) runbookRecoveryHeader(b *runbook) {
	dir := r.cfg.Etcd.DataDir
	b.w("**A recovery:** the control plane was lost (`/etc/kubernetes` on the control-plane nodes, or the nodes), and the")
	b.w("snapshot is what survived: the database of an etcd member, `%s/member/snap/db`, copied while no etcd ran on", dir)
	b.w("it (the kubelet stopped it with its manifest; a copy of a running member's file can be torn), and read with")
	b.w("`skipHashCheck: true` (it has no sha256 trailer). Writes its member had not yet moved from the WAL to the database")
	b.w("are lost. On the node whose member was last the leader, or has the highest revision:")
	b.w("")
	b.shAs("recover-db", bundle.WhereControlPlane,
		fmt.Sprintf("while [ -n \"$(crictl ps --name etcd -q)\" ]; do sleep 2; done   # no etcd runs from %s", dir),
		fmt.Sprintf("mkdir -p /backup && cp %s/member/snap/db /backup/etcd.db   # on %s", dir, r.firstNode().NodeName))
	b.w("")
	b.w("`node apply` accepts a control-plane node without `/etc/kubernetes`, its static pods or an etcd data dir, and moves")
	b.w("what is left (the old data dir) into its backup; `node rollback` puts that back, which is the lost state, not a")
	b.w("running control plane. The workers keep running their pods throughout.")
	b.w("")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// runbookChanges is what changed in the snapshot.
func (r *run) runbookChanges(b *runbook) {
	c := r.cfg
	b.section("changes", bundle.WhereNone, "What changed in the snapshot")
	if p := r.report.Plan; p != nil && p.Service != nil {
		b.w("- Service CIDR %s -> %s (%d Services moved; `default/kubernetes` is now the first address).", cidr.Join(p.Service.Old), cidr.Join(p.Service.New), len(p.Service.Services))
	}
	if p := r.report.Plan; p != nil && p.Pod != nil {
		b.w("- Pod CIDR %s -> %s (%d Nodes moved, each keeping its mask size).", cidr.Join(p.Pod.Old), cidr.Join(p.Pod.New), len(p.Pod.Nodes))
	}
	for _, rr := range r.report.Transform.Rules {
		b.w("- rule %s: %d changed, %d deleted, %d created.", rr.Name, rr.Changed, rr.Deleted, rr.Created)
		for _, n := range rr.Notes {
			b.w("  - %s", n)
		}
	}
	if c.NewPKI() {
		b.w("- A new PKI: a new cluster CA and sa.key (the same on every node); each control-plane node has its own serving certificates and kubeconfigs in `%s/<node>/`.", filepath.Join(c.Output, bundle.KubeDir))
	} else {
		b.w("- Certificates reissued per node from the CA of `%s` in `%s/<node>/pki` (see report.json for every SAN).", c.PKI.Source, filepath.Join(c.Output, bundle.KubeDir))
	}
	for _, n := range r.report.ClusterConfiguration {
		b.w("- %s", n)
	}
	b.w("")
}

// runbookPrepare copies each node's part of the bundle and checks it.
func (r *run) runbookPrepare(b *runbook) {
	out := r.cfg.Output
	b.step("copy", bundle.WhereOperator, "Copy each node's part of the bundle, and snapshift, to that node")
	b.w("Each control-plane node gets only its own directory (its certificates, kubeconfigs and manifests carry its own name and")
	b.w("address), its own etcd member, report.json and runbook.json. What an earlier bundle left there goes first: preflight")
	b.w("refuses a file report.json does not list. From the machine holding the bundle:")
	var lines []string
	for _, n := range r.report.Nodes {
		h := "root@" + n.AdvertiseAddress
		// The node's previous bundle goes first (its two directories, not
		// the directory itself, which may be a mount point): copied over,
		// its files that this bundle lacks (a new-CA rehearsal's kubeconfigs
		// before an old-CA window) would stay, and preflight refuses them.
		lines = append(lines, fmt.Sprintf("# %s (etcd member %s)", n.Name, n.EtcdMember),
			fmt.Sprintf("ssh %s rm -rf %s/%s %s/%s", h, bundle.NodeBundleDir, bundle.KubeDir, bundle.NodeBundleDir, bundle.EtcdDir),
			fmt.Sprintf("ssh %s mkdir -p %s/%s %s/%s", h, bundle.NodeBundleDir, bundle.KubeDir, bundle.NodeBundleDir, bundle.EtcdDir),
			fmt.Sprintf("scp -p %s %s:%s/", filepath.Join(out, bundle.ReportFile), h, bundle.NodeBundleDir),
			fmt.Sprintf("scp -p %s %s:%s/", filepath.Join(out, bundle.RunbookJSONFile), h, bundle.NodeBundleDir),
			fmt.Sprintf("scp -rp %s %s:%s/%s/", filepath.Join(out, n.Dir), h, bundle.NodeBundleDir, bundle.KubeDir),
			fmt.Sprintf("scp -rp %s %s:%s/%s/", filepath.Join(out, bundle.EtcdDir, n.EtcdMember), h, bundle.NodeBundleDir, bundle.EtcdDir),
			fmt.Sprintf("scp -p \"$(command -v snapshift)\" %s:/usr/local/bin/snapshift", h))
	}
	b.shAs("bundle", "", lines...)
	b.w("Then, on each control-plane node, run the checks alone (nothing is changed): right host, every file's sha256 against")
	b.w("report.json, disk space for the backups, `crictl` and `systemctl` present:")
	var checks []string
	for _, n := range r.report.Nodes {
		checks = append(checks, fmt.Sprintf("snapshift node apply --bundle %s --node %s --preflight-only   # on %s", bundle.NodeBundleDir, n.Name, n.Name))
	}
	b.shAs("preflight", bundle.WhereControlPlane, checks...)
	if len(r.report.MissingFiles) > 0 {
		b.w("The manifests name files the bundle does not hold (they came from the cluster's kubeadm-config or manifests): make sure each is on every control-plane node:")
		for _, m := range r.report.MissingFiles {
			b.w("- `%s` (%s %s)", m.Path, m.Component, m.Flag)
		}
	}
	b.w("")
}

// kubeletWorkers are the workers that run a kubelet: the snapshot's
// Nodes that are no control-plane node of this rebuild, less those the
// plan found without one (the runbook names those apart).
func (r *run) kubeletWorkers() []string {
	var none []string
	if p := r.report.Plan; p != nil {
		none = p.NoKubelet
	}
	return slices.DeleteFunc(slices.Clone(r.workers), func(w string) bool { return slices.Contains(none, w) })
}

// onWorkers is "each worker: w1, w2", the workers by name.
func (r *run) onWorkers() string {
	return "each worker: " + capNodes(r.kubeletWorkers(), 20)
}

// runbookStopWorkers backs up the workers' kubelet identity and CNI host
// state, stops their kubelets and removes that state (apply does the same
// on the control-plane nodes); the rollback puts the backup back.
func (r *run) runbookStopWorkers(b *runbook) {
	b.step("workers-stop", bundle.WhereWorkers, "Back up and stop the kubelet on every worker node").Undo = "rollback"
	if len(r.kubeletWorkers()) == 0 {
		b.w("The snapshot lists no worker Node with a kubelet (every other Node is a control-plane node above): nothing to do.")
		b.w("")
		return
	}
	b.w("On %s, as root. First the line naming that worker's backup directory (the path `node apply` uses on the", r.onWorkers())
	b.w("control-plane nodes; section \"Rollback\" restores from it), then the rest, the same on every worker:")
	var lines []string
	for _, w := range r.kubeletWorkers() {
		lines = append(lines, fmt.Sprintf("B=%s   # on %s", b.backupDir(w), w))
	}
	lines = append(lines, `mkdir -p "$B/etc" "$B/kubelet" "$B/cni"`,
		`cp -a /etc/kubernetes "$B/etc/"                 # kubelet.conf: the kubelet's identity in the old cluster`,
		`cp -a /var/lib/kubelet/config.yaml /var/lib/kubelet/pki "$B/kubelet/"`,
		`[ -e /var/lib/kubelet/kubeadm-flags.env ] && cp -a /var/lib/kubelet/kubeadm-flags.env "$B/kubelet/"`,
		"systemctl stop kubelet")
	for _, c := range r.cnis {
		if st, ok := bundle.CNIHostStateOf(c); ok {
			if len(st.Paths) > 0 {
				lines = append(lines, "# "+c+"'s host state holds the old pod range (the control-plane nodes' apply removes theirs); its files are copied first:")
			} else {
				lines = append(lines, "# "+c+"'s host state holds the old pod range (the control-plane nodes' apply removes theirs):")
			}
			for _, p := range st.Paths {
				// Not cp -a --parents: coreutils 9.1 (Debian 12) fails on an
				// absolute source after copying ("cp: 'var/lib/cni/networks':
				// No such file or directory"), seen by the lab.
				d := path.Dir(p)
				lines = append(lines, fmt.Sprintf(`[ -e %s ] && mkdir -p "$B/cni%s" && cp -a %s "$B/cni%s/"`, p, d, p, d))
			}
			lines = append(lines, st.Commands()...)
		}
	}
	b.shAs("backup", "", lines...)
	b.w("Their pods keep running, without pod networking (the CNI agent is stopped), until the staged restart replaces them.")
	b.w("")
}

// endpointChanged says whether the control plane is reached at an
// endpoint it was not reached at before (a new controlPlaneEndpoint).
func (r *run) endpointChanged() bool {
	ep := r.cfg.Networking.ControlPlaneEndpoint
	return ep != "" && (r.cc == nil || r.cc.ControlPlaneEndpoint != ep)
}

// runbookEndpoint is the new controlPlaneEndpoint's DNS record or load
// balancer, a step before any apply: the new kubeconfigs, the kubelets and
// the join command reach the control plane there.
func (r *run) runbookEndpoint(b *runbook) {
	if !r.endpointChanged() {
		return
	}
	ep := r.apiEndpoint()
	host, port, _ := net.SplitHostPort(ep)
	var addrs, backends []string
	for _, n := range r.report.Nodes {
		addrs = append(addrs, n.AdvertiseAddress)
		backends = append(backends, net.JoinHostPort(n.AdvertiseAddress, "6443"))
	}
	if slices.Contains(addrs, host) && port == "6443" {
		return // a control-plane node's own address: nothing to point
	}
	b.step("endpoint", bundle.WhereNone, "Point the new control-plane endpoint %s at the control-plane nodes, before any apply", ep)
	b.w("On your DNS server or load balancer (not on a node): every kubeconfig of the bundle (`admin.conf`, `kubelet.conf`), the")
	b.w("kubelets and the join command reach the control plane at `%s`, and each node's health gate uses its `admin.conf`.", ep)
	if _, err := netip.ParseAddr(host); err == nil {
		b.w("- %s is an address: the load balancer or virtual IP (kube-vip, keepalived) holding it forwards port %s to %s.", host, port, strings.Join(backends, ", "))
	} else {
		b.w("- DNS: `%s` resolves to %s (one A/AAAA record each), or to a load balancer that forwards port %s to %s.", host, strings.Join(addrs, ", "), port, strings.Join(backends, ", "))
	}
	b.w("- A load balancer's health check: `GET /readyz` over HTTPS on each backend (it fails until that node's apply is done).")
	b.w("**Check**, from every node (control-plane and %s): `getent hosts %s` names the addresses above.", r.onWorkers(), host)
	b.w("")
}

// runbookApply is the control plane's switch: apply on every node.
func (r *run) runbookApply(b *runbook) {
	b.step("apply", bundle.WhereControlPlane, "Apply the bundle on every control-plane node, in two phases").Undo = "rollback"
	b.w("etcd needs a quorum (%d of %d members) before any node's health gate can pass: start the command on every", len(r.report.Nodes)/2+1, len(r.report.Nodes))
	w := r.cfg.Window
	if w.ApplyTimeout == "" {
		w.ApplyTimeout = DefaultApplyTimeout
	}
	b.w("control-plane node within a few minutes of each other (one terminal each). `--timeout %s` (the configuration's", w.ApplyTimeout)
	b.w("`window.applyTimeout`) bounds each wait (static pods stopping, etcd's quorum, kube-apiserver's `/readyz`): give more,")
	b.w("e.g. `--timeout 15m`, on slow disks, with a large etcd, or when the nodes start minutes apart.")
	b.w("")
	b.w("It runs in two phases. **First, on every control-plane node, stop the old control plane** (`--stop-only`: the checks,")
	b.w("the backup, the static pods stopped and the old etcd data dir moved into the backup; it ends with `[apply] stopped`):")
	flags := "--timeout " + w.ApplyTimeout
	if w.RollbackAfter != "" {
		flags += " --rollback-after " + w.RollbackAfter
	}
	var stops, lines []string
	for _, n := range r.report.Nodes {
		stops = append(stops, fmt.Sprintf("snapshift node apply --bundle %s --node %s %s --stop-only   # on %s", bundle.NodeBundleDir, n.Name, flags, n.Name))
		lines = append(lines, fmt.Sprintf("snapshift node apply --bundle %s --node %s %s   # on %s", bundle.NodeBundleDir, n.Name, flags, n.Name))
	}
	b.shAs("stop", "", stops...)
	b.w("**Then, once every node says `[apply] stopped`, start the restored members**, on every node at once:")
	b.shAs("start", "", lines...)
	r.runbookWhyTwoPhases(b)
	// node apply's steps, from the one list nodeops runs (bundle.ApplySteps).
	b.w("On each node, in order, it:")
	for i, st := range bundle.ApplySteps {
		b.w("%d. `%s`: %s.", i+1, st.ID, st.Does)
	}
	b.w("Its backup directory (the etcd data dir `%s` is moved there), on each node:", r.cfg.Etcd.DataDir)
	for _, n := range r.report.Nodes {
		b.w("- `%s/` on %s", b.backupDir(n.Name), n.Name)
	}
	b.w("It is safe to run again: finished steps are skipped, the backup is made once.")
	b.w("")
	if w.RollbackAfter != "" {
		b.w("**A deadline that rolls back** (the configuration's `window.rollbackAfter`): with `--rollback-after %s` each node", w.RollbackAfter)
		b.w("arms a systemd timer")
	} else {
		b.w("**A deadline that rolls back (opt-in):** add `--rollback-after 30m` to each command (or set `window.rollbackAfter` in the")
		b.w("configuration and rebuild), and each node arms a systemd timer")
	}
	b.w("(`snapshift-rollback-<node>`, through `systemd-run`: it outlives your SSH session, not a reboot) that runs")
	b.w("`snapshift node rollback-if-unconfirmed` at the deadline. Once the final checks pass, run on every control-plane node,")
	b.w("before the deadline, `snapshift node confirm`: it records the node healthy and removes the timer. A node not confirmed")
	b.w("in time rolls back by itself as in section \"Rollback\", whatever step you are at; the workers are not rolled back by it")
	b.w("(roll them back as that section says).")
	var confirm []string
	for _, n := range r.report.Nodes {
		confirm = append(confirm, fmt.Sprintf("snapshift node confirm --bundle %s --node %s   # on %s, after the final checks", bundle.NodeBundleDir, n.Name, n.Name))
	}
	b.shAs("confirm", "", confirm...)
	b.w("")
	b.w("**Check:** each command ends with `[apply] done` and exit 0. **If it fails** it exits non-zero and names what to")
	b.w("read (`crictl ps -a`, `crictl logs <id>`, `journalctl -u kubelet`, `/var/log/pods/kube-system_etcd-*`).")
	b.w("")
	b.w("**If one of the applies fails** (the others done or still waiting), or one is killed, section \"When something goes")
	b.w("wrong\" says what to do: `%s`, `%s`, `%s`.", faultGateFailed, faultApplyFailed, faultApplyKilled)
	b.w("")
	b.w("**The point of no return:** until `snapshift cluster restart` (the staged restart below) has written to the new")
	b.w("cluster, a rollback loses nothing. After it, or after `snapshift node confirm`, whatever was written to the new cluster")
	b.w("is lost by a rollback; roll forward (fix and run again) instead.")
	b.w("")
	b.step("kubectl", bundle.WhereOperator, "Point kubectl at the new control plane")
	if r.cfg.NewPKI() {
		b.w("From any machine that reaches the new endpoint %s, with the bundle's `admin.conf` (here, the machine holding the", r.apiEndpoint())
		b.w("bundle); steps below that say no machine run there:")
		b.shAs("export", "", fmt.Sprintf("export KUBECONFIG=%s", filepath.Join(r.cfg.Output, r.report.Nodes[0].Dir, "admin.conf")),
			"kubectl get --raw /readyz; kubectl get nodes -o wide")
	} else {
		b.w("On %s (its `/etc/kubernetes/admin.conf`); steps below that say no machine run there:", r.report.Nodes[0].Name)
		b.shAs("export", bundle.WhereControlPlane, fmt.Sprintf("export KUBECONFIG=/etc/kubernetes/admin.conf   # on %s", r.report.Nodes[0].Name),
			"kubectl get --raw /readyz; kubectl get nodes -o wide")
	}
	b.w("Every `kubectl` below uses it.")
	b.w("")
}

// runbookKubelets brings the workers back: rejoined first when the CA
// changed, else restarted (with the new DNS address).
func (r *run) runbookKubelets(b *runbook) {
	op := r.report.Operation
	if r.cfg.NewPKI() && r.token != nil {
		b.step("workers-rejoin", bundle.WhereWorkers, "Rejoin every worker node (the CA changed), before any workload restarts")
		b.w("Their kubelets trust the old CA. Wait until every worker shows `NotReady` (its kubelet is stopped since the worker")
		b.w("step; kubeadm join refuses a Node that is Ready): the node controller sets its Ready condition to Unknown about a")
		b.w("minute after the new control plane is up. With the kubeconfig of the previous step:")
		var ready []string
		for _, w := range r.kubeletWorkers() {
			ready = append(ready, fmt.Sprintf(`kubectl wait node/%s --for=jsonpath='{.status.conditions[?(@.type=="Ready")].status}'=Unknown --timeout=5m   # STATUS NotReady`, w))
		}
		b.shAs("wait", bundle.WhereKubectl, ready...)
		b.w("Then on %s (its old `/etc/kubernetes` and kubelet files are in its backup directory, `$B` of the worker step):", r.onWorkers())
		join := fmt.Sprintf("kubeadm join %s --token %s.%s --discovery-token-ca-cert-hash %s", r.apiEndpoint(), r.token.ID, r.token.Secret, r.report.CAHash)
		if r.cgroupV1 {
			// kubeadm's SystemVerification (k8s.io/system-validators) refuses
			// cgroups v1 for kubelet 1.35+ unless the check is skipped: "You
			// must also explicitly skip this validation" (the lab's nodes).
			join += " --ignore-preflight-errors=SystemVerification   # cgroups v1 (kubelet-config: failCgroupV1: false)"
		}
		b.shAs("join", "", "kubeadm reset -f", join)
		b.w("The token expires at %s (`kubeadm token create --print-join-command` makes another).", r.tokenExpires.Format(time.RFC3339))
		b.w("**Do not `kubectl delete node` a worker** to get past the join check: the Node object carries the pod CIDR the")
		b.w("rebuild moved (`spec.podCIDR` is immutable), a new Node gets whatever the allocator hands out next, and on Calico")
		b.w("calico-kube-controllers releases the deleted node's IPAM blocks. Wait for `NotReady` instead (about a minute).")
		b.w("Kubelets with serverTLSBootstrap ask for serving certificates: `kubectl get csr`, then `kubectl certificate approve <csr>`.")
		b.w("Hosts outside the cluster that run only kube-proxy or a CNI agent with their own kubeconfigs need ones signed by the new CA:")
		b.shAs("kubeconfigs", bundle.WhereOperator, fmt.Sprintf("snapshift certs --cert-dir %s --control-plane-endpoint %s \\", filepath.Join(r.cfg.Output, bundle.KubeDir, r.firstNode().NodeName, "pki"), r.apiEndpoint()),
			"  --kubeconfig-user system:kube-proxy --kubeconfig-out kube-proxy.conf")
	} else {
		b.step("workers-start", bundle.WhereWorkers, "Start the kubelet on every worker node")
		b.w("On %s:", r.onWorkers())
		var lines []string
		if op.ClusterDNS != "" {
			// Both YAML styles: kubeadm writes a block sequence; a file
			// written by hand may hold [a, b]. Then the line the operator reads.
			lines = append(lines, fmt.Sprintf("sed -i -E -e 's/^clusterDNS: *\\[.*\\]/clusterDNS: [%s]/' -e '/^clusterDNS: *$/,/^[^ -]/ s/^( *- *).*/\\1%s/' /var/lib/kubelet/config.yaml   # clusterDNS (the control-plane nodes got it from apply)", op.ClusterDNS, op.ClusterDNS),
				"grep -A1 '^clusterDNS' /var/lib/kubelet/config.yaml   # shows "+op.ClusterDNS)
		}
		b.shAs("kubelet", "", append(lines, "systemctl start kubelet")...)
	}
	if op.ClusterDNS != "" && r.cfg.NewPKI() {
		b.w("A rejoined kubelet reads clusterDNS %s from the kubelet-config ConfigMap (already moved).", op.ClusterDNS)
	}
	if p := r.report.Plan; p != nil && len(p.NoKubelet) > 0 {
		b.w("%d nodes run no kubelet (Ready not True, no recent heartbeat Lease): %s. Nothing above restarts what runs",
			len(p.NoKubelet), capNodes(p.NoKubelet, 20))
		b.w("on them (flannel, kube-proxy as plain services): give each its new ranges and, with a new CA, a kubeconfig")
		b.w("signed by it (the certs command above), and restart it by hand. They stay NotReady, as before.")
	}
	r.runbookStagger(b)
	b.cur().Gate = r.nodesReadyGate()
}

// KubeletBatch is how many workers a large cluster's runbook starts at a
// time: half of kube-apiserver's default --max-requests-inflight (400),
// each kubelet relisting its pods and Node as it starts.
const KubeletBatch = 200

// runbookStagger tells a large cluster (the plan's scale warning) to
// start its kubelets in batches: all at once, they and every DaemonSet's
// pods relist together from an apiserver that has just come back.
func (r *run) runbookStagger(b *runbook) {
	p := r.report.Plan
	if p == nil || p.Scale == nil || p.Scale.Nodes < rules.LargeClusterNodes || len(r.kubeletWorkers()) <= KubeletBatch {
		return
	}
	b.w("**%d nodes: bring the workers in by batches of at most %d**, each batch once the one before shows `Ready` in", p.Scale.Nodes, KubeletBatch)
	b.w("`kubectl get nodes`, not all at once: every kubelet relists its pods and Node as it starts, and the %d DaemonSets'", p.Scale.DaemonSets)
	b.w("pods with it (about %d clients against an apiserver that has just come back; kube-apiserver's default", p.Scale.Relisting)
	b.w("--max-requests-inflight is 400). `ansible/migrate.yml` runs this step in batches of `snapshift_serial` (%s), each", r.serialText())
	b.w("batch `forks` hosts at a time: keep `-f` at or below %d.", KubeletBatch)
}

// serialText is the Ansible worker plays' batch size, as the rebuild file
// set it or its default.
func (r *run) serialText() string {
	if s := r.cfg.Ansible.Serial; s != "" {
		return s
	}
	return ansible.DefaultSerial
}

// nodesReadyGate is the worker step's gate: every node that runs a kubelet
// Ready (all of them, unless the plan found some without one).
func (r *run) nodesReadyGate() *bundle.RunbookGate {
	g := &bundle.RunbookGate{Text: "every node is Ready", Where: bundle.WhereKubectl, Timeout: "10m",
		Command: "kubectl wait node --all --for=condition=Ready --timeout=10m"}
	if p := r.report.Plan; p != nil && len(p.NoKubelet) > 0 {
		var names []string
		for _, n := range r.report.Nodes {
			names = append(names, "node/"+n.Name)
		}
		for _, w := range r.kubeletWorkers() {
			names = append(names, "node/"+w)
		}
		g.Text = "every node that runs a kubelet is Ready"
		g.Command = "kubectl wait " + strings.Join(names, " ") + " --for=condition=Ready --timeout=10m"
	}
	return g
}

// restartTimeout is cluster restart's --timeout: window.restartTimeout.
func (r *run) restartTimeout() string {
	if t := r.cfg.Window.RestartTimeout; t != "" {
		return t
	}
	return DefaultRestartTimeout
}

// runbookRestart is the staged restart, rendered from the same stage list
// `snapshift cluster restart` executes (restart.Plan of report.json's
// operation.cluster).
func (r *run) runbookRestart(b *runbook) {
	stages := restart.Plan(*r.clusterInput())
	st := b.step("restart", bundle.WhereKubectl, "Restart the workloads, in stages")
	st.PointOfNoReturn = true
	b.w("Running pods keep their old addresses, resolv.conf and KUBERNETES_SERVICE_HOST, and tokens signed by an old key.")
	where, dir := r.clusterHost()
	b.w("%s:", where)
	b.shAs("run", "", fmt.Sprintf("snapshift cluster restart --bundle %s --dry-run   # every action, nothing changed", dir),
		fmt.Sprintf("snapshift cluster restart --bundle %s --timeout %s", dir, r.restartTimeout()))
	b.w("It runs the stages below in order: each rollout is waited for as `kubectl rollout status` waits (`--timeout` each: the")
	b.w("configuration's `window.restartTimeout`; more for DaemonSets on thousands of nodes),")
	b.w("and a stage starts only when the one before is done. Run it again after a failure: a rollout restarted since this")
	b.w("bundle was made is not restarted again, only waited for; pods already gone are skipped. By hand, the same stages:")
	b.w("")
	if len(stages) == 0 {
		b.w("(the snapshot holds nothing to restart)")
	}
	for i, st := range stages {
		b.w("**Stage %d, %s.**", i+1, st.Title)
		for _, n := range st.Notes {
			b.w("- %s", n)
		}
		var lines []string
		for _, a := range st.Actions {
			lines = append(lines, a.Commands()...)
		}
		if len(lines) > 0 {
			b.shAs(fmt.Sprintf("stage-%d", i+1), "", lines...)
		}
	}
	b.w("")
}

// clusterHost says where `snapshift cluster restart|check` run, and the
// --bundle they read (report.json only): with a new PKI, the machine that
// holds the bundle and its admin.conf; with the old CA, the first
// control-plane node, whose admin.conf "Point kubectl" exported and whose
// copy of the bundle has report.json (the lab found the bundle's own path
// named there, which that node does not have).
func (r *run) clusterHost() (where, dir string) {
	if r.cfg.NewPKI() {
		return "From the machine that holds the bundle (any machine that reaches the new endpoint, with the kubeconfig of the previous step)", r.cfg.Output
	}
	return fmt.Sprintf("On %s, with the kubeconfig of the previous step (its %s holds report.json, which is what these commands read)", r.report.Nodes[0].Name, bundle.NodeBundleDir), bundle.NodeBundleDir
}

// runbookFollowUp is the Services kept, the leftovers, and the checks.
func (r *run) runbookFollowUp(b *runbook) {
	c := r.cfg
	kept := c.Networking.KeepServiceIPs
	if d := r.clusterInput().DNS; d != nil && d.Bridge != "" {
		kept = slices.DeleteFunc(slices.Clone(kept), func(s string) bool { return s == d.Service }) // the restart's DNS handover moves it
	}
	if len(kept) > 0 {
		b.step("later-kept-services", bundle.WhereKubectl, "Later: move the Services kept at their old address")
		b.w("%s still use the old service range. Once nothing depends on those addresses, recreate each Service with an address in the new range.", strings.Join(kept, ", "))
		b.w("")
	}
	lo, old := r.report.Leftovers, r.report.OldAddresses
	if (lo != nil && len(lo.Groups) > 0) || len(old) > 0 {
		b.step("leftovers", bundle.WhereNone, "Addresses no rule moved")
		if lo != nil {
			for _, g := range lo.Groups {
				if e := g.Examples[0]; e.Note != "" && len(e.Addresses) > 0 {
					b.w("- old range, %s: %d keys (e.g. %s, %s)", g.Resource, g.Keys, e.Key, e.Note)
				} else {
					b.w("- old range, %s: %d keys (e.g. %s)", g.Resource, g.Keys, e.Key)
				}
			}
		}
		for _, g := range old {
			b.w("- old control-plane address, %s: %d keys (e.g. %s)", g.Resource, g.Keys, g.Example)
		}
		b.w("Pods, Endpoints and EndpointSlices are recreated by the restart and their controllers; Nodes by their kubelets; anything else (add-on configuration, webhooks, external load balancers) is yours to update.")
		b.w("")
	}
	b.step("check", bundle.WhereKubectl, "Check")
	b.w("One line per check, exit 5 naming the checks that failed and what to read (Nodes Ready with new podCIDRs, pods on new")
	b.w("addresses, `default/kubernetes` at the new first address, the DNS Service at the kubelets' clusterDNS, a DNS lookup from a")
	b.w("short-lived pod, no ClusterIPOutOfRange/ClusterIPNotAllocated events, nothing back with another range (ServiceCIDRs, the")
	b.w("control plane's flags, k3s/RKE2 node-args, kubeadm-config), the CNI's and the DNS's pods Ready):")
	where, dir := r.clusterHost()
	b.w("%s:", where)
	b.shAs("run", "", fmt.Sprintf("snapshift cluster check --bundle %s", dir),
		"kubectl get svc -A -o wide; kubectl get nodes -o custom-columns=NAME:.metadata.name,PODCIDRS:.spec.podCIDRs")
	b.w("")
	r.runbookInstaller(b)
}

// runbookInstaller is the step that moves the installer's own files (the
// bundle's installer/): without it the installer's next run brings the
// old ranges back.
func (r *run) runbookInstaller(b *runbook) {
	if len(r.report.Installer) == 0 {
		return
	}
	b.step("installer", bundle.WhereOperator, "Before the installer runs again: its files, moved with the cluster")
	b.w("The installer's next run reads its own files, not the cluster: left as they are, they bring the old ranges back")
	b.w("(`cluster check`'s installer-ranges check finds it afterwards).")
	var lines []string
	for _, f := range r.report.Installer {
		b.w("- %s: %s (%s).", f.Installer, f.ApplyTo, strings.Join(f.Changes, "; "))
		if f.Path == "" {
			continue
		}
		src := filepath.Join(r.cfg.Output, filepath.FromSlash(f.Path))
		switch f.Installer {
		case "kubespray":
			dst := strings.TrimSuffix(f.ApplyTo, ", before kubespray runs again")
			lines = append(lines, fmt.Sprintf("diff -u %s %s || true   # what changes", dst, src), fmt.Sprintf("cp %s %s", src, dst))
		default:
			if d := r.report.Plan.Distribution(); d != nil {
				for _, s := range d.Servers {
					dir := "/etc/rancher/" + f.Installer + "/config.yaml.d"
					lines = append(lines, fmt.Sprintf("ssh root@%s mkdir -p %s && scp -p %s root@%s:%s/   # server %s", s.Node, dir, src, s.Node, dir, s.Node))
				}
			}
		}
	}
	if len(lines) > 0 {
		b.w("From the machine holding the bundle:")
		b.shAs("files", "", lines...)
	}
	b.w("")
}

// The faults of section "When something goes wrong" (bundle.RunbookFault
// IDs; the lab's fault scenarios name them).
const (
	faultWorkerDown   = "worker-down"
	faultApplyKilled  = "apply-killed"
	faultDiskFull     = "disk-full"
	faultGateFailed   = "gate-failed"
	faultApplyFailed  = "apply-failed"
	faultDeadline     = "deadline"
	faultRestartStuck = "restart-stuck"
)

// runbookFaults is section "When something goes wrong": each fault of the
// window, the decision, why, the state it ends in and the blocks that get
// there. Written after "Rollback", whose blocks it names.
func (r *run) runbookFaults(b *runbook) {
	s := b.section("faults", bundle.WhereNone, "When something goes wrong")
	b.w("Every case below ends in one of two states, never between them: the new cluster on the new ranges (roll forward), or")
	b.w("the old cluster on the old ranges (roll back, section \"Rollback\"). Until `snapshift cluster restart` writes to the new")
	b.w("cluster, rolling back loses nothing; after it, roll forward. The old etcd data dir stays in each node's backup until")
	b.w("`snapshift node confirm`.")
	b.w("")
	doc := &b.doc
	has := func(id string) bool { return doc.Block(id) != nil }
	var rollback []string
	for _, id := range []string{"rollback.control-plane", "rollback.workers", "rollback.pods"} {
		if has(id) {
			rollback = append(rollback, id)
		}
	}
	workersBack := slices.DeleteFunc(slices.Clone(rollback), func(id string) bool { return id == "rollback.control-plane" })
	if workers := r.kubeletWorkers(); len(workers) > 0 {
		run := []string{"workers-stop.backup"}
		for _, id := range []string{"workers-rejoin.join", "workers-start.kubelet"} {
			if has(id) {
				run = append(run, id)
				break
			}
		}
		// Its out-of-service taint off, once it is in again: one line per
		// worker, the late one's run.
		var untaint []string
		for _, w := range workers {
			untaint = append(untaint, fmt.Sprintf("kubectl taint node %s %s-   # on %s", w, restart.OutOfServiceKey, w))
		}
		b.w("A worker that was down through the window (`%s` below), once its worker steps ran on it: the taint `cluster restart --down` gave it off, so that its CNI agent and pods can run there again (its line only):", faultWorkerDown)
		b.shAs("late-node", bundle.WhereKubectl, untaint...)
		b.w("")
		run = append(run, "faults.late-node")
		s.Faults = append(s.Faults, bundle.RunbookFault{ID: faultWorkerDown, EndsIn: bundle.EndsNew, Run: run,
			When: "A worker is down or unreachable through the window (off: its kubelet and containers stopped).",
			Do:   "Go on without it: skip its lines of the worker steps, wait in their gates for the nodes that are up (`kubectl wait node/A node/B ...` instead of `node --all`), and give it to `snapshift cluster restart` and `snapshift cluster check` with `--down NODE`. Once the final checks pass and it is back, run its worker steps on it as the others ran them, then its line of block `faults.late-node` (`ansible-playbook ansible/late-node.yml -l NODE` does both; by hand, the blocks named here with that worker's `B=` line).",
			Why:  "a worker holds no cluster state: the control plane does not wait for it. `--down` gives it Kubernetes' out-of-service taint, so its pods are moved to nodes that are up and no rollout waits for it (a DaemonSet's own rolling update stops at a node that is down), and leaves it out of the checks; once its kubelet starts with the new configuration (joined again when the CA changed) and the taint is off, its pods get addresses in the new range."})
	}
	s.Faults = append(s.Faults,
		bundle.RunbookFault{ID: faultApplyKilled, EndsIn: bundle.EndsNew, Run: []string{"apply.stop", "apply.start"},
			When: "`node apply` died on a node (killed, its SSH session lost, the machine that ran it gone).",
			Do:   "Run the same `node apply` line again on that node, in the phase it was in (`--stop-only` in the first): it resumes from `backup.json`, skipping the steps done.",
			Why:  "each step is recorded once done and every file is written under a temporary name first: a second run neither repeats a step nor finds one half done, and the backup is made once."},
		bundle.RunbookFault{ID: faultDiskFull, EndsIn: bundle.EndsNew, Run: []string{"apply.stop", "apply.start"},
			When: "`node apply` refused a node for space: a file system it writes to (the backup's, the etcd data dir's) cannot hold what it writes there.",
			Do:   "Make room on the file system the refusal names (or give etcd a larger disk at the same path) and run the same `node apply` line again. If you cannot in the window, do as for `" + faultApplyFailed + "`.",
			Why:  "preflight adds up what apply writes to each file system, and frees, in the order it does, and refuses before the step that would fill one: the refused run changed nothing, and a second run resumes from `backup.json`."},
		bundle.RunbookFault{ID: faultGateFailed, EndsIn: bundle.EndsNew, Run: []string{"apply.start"},
			When: "A health gate failed on a node whose files are installed: etcd without its quorum, or kube-apiserver not ready within `--timeout`.",
			Do:   "Fix the cause (a member not started yet, a slow disk, a port taken) and run the same `node apply` again, with a longer `--timeout` if it was only slow. If the cause cannot be fixed in the window, do as for `" + faultApplyFailed + "`.",
			Why:  "the restored members need each other's quorum; a second apply often passes once the other members are up."},
		bundle.RunbookFault{ID: faultApplyFailed, EndsIn: bundle.EndsOld, Run: rollback,
			When: "An apply failed otherwise: a check refused the node, the node cannot run the new etcd or kube-apiserver, its disk is read-only, or full with no room to make (`" + faultDiskFull + "`).",
			Do:   "Roll back **every** control-plane node, `snapshift node rollback` on each, also those whose apply passed, then the workers (section \"Rollback\"). A node whose apply stopped before its backup has nothing to roll back, and its rollback says so.",
			Why:  "the etcd members were restored from one snapshot as one new cluster and need each other: the applied nodes cannot go on without the failed one, nor can the old members run beside the new ones."},
		bundle.RunbookFault{ID: faultDeadline, EndsIn: bundle.EndsOld, Run: workersBack,
			When: "The `--rollback-after` deadline passed before `snapshift node confirm`.",
			Do:   "Each control-plane node's timer rolled that node back by itself (once its apply had returned; `node rollback` run on it again skips what is done). Roll back the workers (section \"Rollback\").",
			Why:  "the timer rolls back only the control-plane node it runs on; the workers' kubelets, stopped by the worker step, wait for you."},
	)
	if has("restart.run") {
		s.Faults = append(s.Faults, bundle.RunbookFault{ID: faultRestartStuck, EndsIn: bundle.EndsNew, Run: []string{"restart.run"},
			When: "`snapshift cluster restart` stopped at a stage: a node unreachable, a rollout not done within `--timeout`.",
			Do:   "Fix the cause (the partition, the node) and run `cluster restart` again: it skips the stages done.",
			Why:  "the restart has written to the new cluster: a rollback now would lose those writes."})
	}
}

// runbookRollback is how to go back: every node at once, then the workers.
func (r *run) runbookRollback(b *runbook) {
	b.section("rollback", bundle.WhereControlPlane, "Rollback")
	b.w("Until you write to the new cluster, going back loses nothing; after, whatever was written to it is lost. On every")
	b.w("control-plane node, all at once (the old etcd members need their quorum too):")
	var lines []string
	for _, n := range r.report.Nodes {
		lines = append(lines, fmt.Sprintf("snapshift node rollback --bundle %s --node %s   # on %s", bundle.NodeBundleDir, n.Name, n.Name))
	}
	b.shAs("control-plane", "", lines...)
	b.w("It stops the new static pods and the kubelet, puts back every path `backup.json` records byte for byte (the old")
	b.w("etcd data dir, `/etc/kubernetes`, the kubelet's config and `pki/`) and `kube-apiserver.yaml` from")
	b.w("`manifests.before-snapshift`, removes the new cluster's CNI host state, starts the kubelet and waits for the old etcd and")
	b.w("kube-apiserver, as apply does (and removes the `--rollback-after` timer; an unconfirmed node's timer does all this by")
	b.w("itself at the deadline).")
	workers := r.kubeletWorkers()
	if len(workers) == 0 {
		return
	}
	b.w("")
	b.w("Then on %s, put back what the worker step changed, from that worker's backup directory (its `B=` line", r.onWorkers())
	b.w("of the worker step):")
	var wl []string
	for _, w := range workers {
		wl = append(wl, fmt.Sprintf("B=%s   # on %s", b.backupDir(w), w))
	}
	wl = append(wl, "systemctl stop kubelet")
	// The new cluster's CNI host state first (cni0 holds an address of the
	// new pod range: the old range's pods would fail "cni0 already has an
	// IP address different from ..."), as on the control-plane nodes.
	for _, c := range r.cnis {
		if st, ok := bundle.CNIHostStateOf(c); ok {
			wl = append(wl, st.Commands()...)
		}
	}
	if r.cfg.NewPKI() {
		wl = append(wl, "kubeadm reset -f   # only if it was rejoined to the new cluster")
	}
	// Emptied and filled, not removed: /etc/kubernetes may be a mount point
	// (the lab's nodes have it so: rm -rf of it fails with EBUSY).
	wl = append(wl, `find /etc/kubernetes -mindepth 1 -delete && cp -a "$B/etc/kubernetes/." /etc/kubernetes/   # its old kubelet.conf, signed by the old CA`,
		`cp -a "$B/kubelet/." /var/lib/kubelet/                        # config.yaml (the old clusterDNS), pki/, kubeadm-flags.env`)
	var links, protos, paths []string
	for _, c := range r.cnis {
		if st, ok := bundle.CNIHostStateOf(c); ok {
			links = append(links, append(slices.Clone(st.Links), st.Flush...)...)
			protos = append(protos, st.RouteProtos...)
			paths = append(paths, st.Paths...)
		}
	}
	if len(paths) > 0 {
		wl = append(wl, fmt.Sprintf(`cp -a "$B/cni/." /   # the CNI's files the worker step removed: %s`, strings.Join(paths, ", ")))
	}
	wl = append(wl, "systemctl start kubelet")
	b.shAs("workers", bundle.WhereWorkers, wl...)
	if len(links) > 0 || len(protos) > 0 {
		what := "interfaces " + strings.Join(links, ", ")
		if len(protos) > 0 {
			what += " and the routes of protocol " + strings.Join(protos, ", ")
		}
		b.w("The %s the worker step deleted (or flushed) are not in the backup: the CNI (%s) recreates them when its", what, strings.Join(r.cnis, ", "))
		b.w("agent's pod starts again on the worker. Pods that were running there lost their link to them: delete them so their controllers recreate them,")
		b.w("with the old cluster's kubeconfig, once the old control plane is back (the control-plane nodes too: their rollback")
		b.w("removed the same state; a static pod's mirror is recreated by its kubelet, its containers keep running):")
		var del []string
		for _, n := range r.report.Nodes {
			del = append(del, "kubectl delete pod -A --field-selector spec.nodeName="+n.Name)
		}
		for _, w := range workers {
			del = append(del, "kubectl delete pod -A --field-selector spec.nodeName="+w)
		}
		b.shAs("pods", bundle.WhereKubectl, del...)
	}
}

// relocate makes every path in the report name its final place in the
// bundle, not the temporary directory it was built in.
func (r *run) relocate() {
	fix := func(s string) string { return strings.ReplaceAll(s, r.tmp, r.cfg.Output) }
	for i := range r.report.PKI {
		p := &r.report.PKI[i]
		p.Dir = fix(p.Dir)
		for j := range p.Files {
			p.Files[j].Path, p.Files[j].Backup = fix(p.Files[j].Path), fix(p.Files[j].Backup)
		}
		for j := range p.Reused {
			p.Reused[j] = fix(p.Reused[j])
		}
	}
	for i := range r.report.Manifests {
		r.report.Manifests[i] = fix(r.report.Manifests[i])
	}
	if o := r.report.Transform.Output; o != nil {
		o.Path = fix(o.Path)
	}
}

// capNodes joins node names, the first max of them, and says how many more
// there are (report.json's plan lists them all).
func capNodes(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … and %d more (report.json lists them all)", strings.Join(names[:max], ", "), len(names)-max)
}

// newClusterID and oldClusterID are the etcd cluster IDs report.json
// records ("" when unknown).
func (r *run) newClusterID() string {
	if r.report.Etcd == nil {
		return ""
	}
	return r.report.Etcd.New.ClusterID
}

func (r *run) oldClusterID() string {
	if r.report.Etcd == nil {
		return ""
	}
	return r.report.Etcd.Old.ClusterID
}

// runbookWhyTwoPhases says why apply runs in two phases and what it checks
// of the other members (issue 45).
func (r *run) runbookWhyTwoPhases(b *runbook) {
	b.w("Why two phases: an old etcd member that still runs while a restored one starts on the same peer URLs, with a CA that")
	b.w("accepts it, would take the restored member for one of its own and hand it the old cluster's log. The bundle gives the")
	old := "the old cluster's"
	if id := r.oldClusterID(); id != "" {
		old += " (" + id + ")"
	}
	b.w("restored cluster its own token, so its cluster ID (%s) and member IDs are not %s", r.newClusterID(), old)
	b.w("and etcd's peers refuse each other's messages; the two phases make the order sure as well. Before it starts the kubelet,")
	b.w("apply asks every other peer URL of the bundle who it is (`GET /members`, its cluster ID) and refuses, naming the node,")
	b.w("while one answers as a member of another cluster; its health gate fails if a member's cluster or member ID is not the")
	b.w("one `report.json` records.")
	b.w("")
}

// writeAnsible renders runbook.json as the bundle's ansible/ (an inventory
// of its nodes, migrate.yml, rollback.yml, late-node.yml and one script per
// block and host): 0600, as RUNBOOK.md (the join block holds the
// bootstrap token's secret).
func (r *run) writeAnsible(doc *bundle.Runbook) error {
	var workers []ansible.Host
	for _, w := range r.kubeletWorkers() {
		workers = append(workers, ansible.Host{Name: w})
	}
	rj, err := os.ReadFile(r.path(bundle.RunbookJSONFile))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(rj)
	files, err := ansible.Render(ansible.Input{Runbook: doc, ControlPlane: r.report.Nodes, Workers: workers, Serial: r.cfg.Ansible.Serial,
		RunbookSHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		return err
	}
	for rel, b := range files {
		p := r.path(ansible.Dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

package nodeops_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/nodetest"
	"github.com/snapshift/snapshift/nodeops"
)

// preflightOnly runs apply --preflight-only on root, checks it changed
// nothing there, and returns its output and error.
func preflightOnly(t *testing.T, b, root string) (string, error) {
	t.Helper()
	before := tree(t, root, ".")
	var out bytes.Buffer
	_, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, PreflightOnly: true, Out: &out})
	if after := tree(t, root, "."); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("--preflight-only changed the root")
	}
	return out.String(), err
}

// recorders puts systemctl, crictl and ip first in PATH (outside root).
func recorders(t *testing.T) {
	bin := t.TempDir()
	nodetest.Recorders(t, bin, "")
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
}

// TestPreflightRefusesAnEmptyRoot: an empty --root has no /etc/kubernetes
// and no etcd data dir: both are named, in one run, and apply is refused
// (exit 4), not a backup of nothing.
func TestPreflightRefusesAnEmptyRoot(t *testing.T) {
	b, root := makeBundle(t), t.TempDir()
	recorders(t)
	_, err := preflightOnly(t, b, root)
	if !errors.Is(err, nodeops.ErrRefused) {
		t.Fatalf("preflight on an empty root: %v, want a refusal", err)
	}
	for _, want := range []string{
		"[preflight] 2 checks failed, nothing was changed: (1) no /etc/kubernetes under --root " + root + " (a wrong --root, or not control-plane node n1); ",
		"(2) no etcd data dir /var/lib/etcd under --root " + root + ", where report.json says etcd keeps it",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, err)
		}
	}
	// Not --preflight-only: refused all the same, nothing written.
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); !errors.Is(err, nodeops.ErrRefused) {
		t.Errorf("apply on an empty root: %v, want a refusal", err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "*")); len(m) > 0 {
		t.Errorf("a refused apply wrote %v", m)
	}
}

// TestPreflightRefusesAWrongRoot: a worker's root (a kubelet.conf, an
// empty manifests/, no etcd), and a control-plane root whose etcd data
// dir is not where the bundle says, are refused with what is missing.
func TestPreflightRefusesAWrongRoot(t *testing.T) {
	b := makeBundle(t)
	recorders(t)
	worker := t.TempDir()
	write(t, filepath.Join(worker, "etc/kubernetes/kubelet.conf"), "worker kubelet.conf\n", 0o600)
	os.MkdirAll(filepath.Join(worker, "etc/kubernetes/manifests"), 0o755)
	write(t, filepath.Join(worker, "var/lib/kubelet/config.yaml"), "kind: KubeletConfiguration\n", 0o644)
	_, err := preflightOnly(t, b, worker)
	for _, want := range []string{
		"[preflight] 2 checks failed, nothing was changed: (1) /etc/kubernetes/manifests under --root " + worker + " holds no etcd.yaml or kube-apiserver.yaml: no control plane runs from it",
		"(2) no etcd data dir /var/lib/etcd under --root " + worker,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a worker's root: the refusal does not say %q:\n%v", want, err)
		}
	}

	moved := t.TempDir()
	nodetest.Node(t, moved)
	if err := os.Rename(filepath.Join(moved, "var/lib/etcd"), filepath.Join(moved, "var/lib/etcd-data")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(moved, "var/lib/etcd"), 0o700) // the kubelet's DirectoryOrCreate
	_, err = preflightOnly(t, b, moved)
	if want := "[preflight] etcd data dir /var/lib/etcd under --root " + moved + " holds no member/"; !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "/etc/kubernetes") {
		t.Errorf("etcd's data dir elsewhere: %v, want only %q", err, want)
	}
}

// TestPreflightListsEveryFailure: a tampered bundle, a missing tool and an
// empty root are all named in one run.
func TestPreflightListsEveryFailure(t *testing.T) {
	b, root := makeBundle(t), t.TempDir()
	bin := t.TempDir()
	nodetest.Recorders(t, bin, "")
	os.Remove(filepath.Join(bin, "crictl"))
	t.Setenv("PATH", bin)
	write(t, filepath.Join(b, "kubernetes/n1/admin.conf"), "another admin.conf\n", 0o600)
	_, err := preflightOnly(t, b, root)
	for _, want := range []string{"[preflight] 4 checks failed", "(1) the bundle does not match report.json: kubernetes/n1/admin.conf (sha256 differs); ", "(2) crictl not found in PATH, and apply needs it to stop the old static pods' containers: install cri-tools (crictl) on this node, or put it on PATH; ", "(3) no /etc/kubernetes", "(4) no etcd data dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("the refusal is not one line:\n%v", err)
	}
}

// TestPreflightSaysWhatItDoes: on a kubeadm-shaped root preflight passes
// and says what apply backs up and moves (paths, sizes in human units),
// what it installs, and what rollback restores.
func TestPreflightSaysWhatItDoes(t *testing.T) {
	b, root := makeBundle(t), node(t)
	out, err := preflightOnly(t, b, root)
	if err != nil {
		t.Fatalf("preflight on a kubeadm-shaped root: %v\n%s", err, out)
	}
	bk := "/var/lib/snapshift/backup/n1-"
	for _, want := range []string{
		"[preflight] /etc/kubernetes/manifests has the static pod etcd.yaml; /var/lib/etcd holds an etcd member",
		"[preflight] will back up into " + bk,
		"[preflight]   copy /etc/kubernetes (6 files, 111 B) to " + bk,
		"[preflight]   copy /var/lib/kubelet/config.yaml (83 B) to ",
		"[preflight]   copy /var/lib/kubelet/pki (1 file, 16 B) to ",
		"[preflight]   /etc/enc: absent now (the bundle creates it)",
		"[preflight]   move etcd data dir /var/lib/etcd (2 files, 22 B) to " + bk,
		"[preflight] will install 5 files of kubernetes/n1 under /etc/kubernetes, etcd member m1 (22 B) as /var/lib/etcd",
		"[preflight] the CA changes: will move 2 kubelet-client-*.pem from /var/lib/kubelet/pki into the backup",
		"[preflight] rollback (snapshift node rollback) restores /var/lib/etcd moved back, /etc/enc removed, /var/lib/kubelet/pki from its copy, /var/lib/kubelet/config.yaml from its copy, /etc/kubernetes from its copy, byte for byte",
		"[preflight] passed; nothing changed (--preflight-only)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bytes") {
		t.Errorf("preflight prints raw byte counts:\n%s", out)
	}
	// What it said is what apply backs up.
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); err != nil {
		t.Fatal(err)
	}
	rec, _ := filepath.Glob(filepath.Join(root, bk+"*", nodeops.RecordFile))
	raw, _ := os.ReadFile(rec[0])
	for _, want := range []string{`"path": "/etc/kubernetes",`, `"path": "/etc/enc",
      "how": "absent"`, `"path": "/var/lib/etcd",
      "how": "moved",`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("backup.json does not record %s:\n%s", want, raw)
		}
	}
}

// kubesprayNode writes, under root, what kubespray's default etcd
// (etcd_deployment_type: host) leaves on a control-plane node: the unit
// and environment file of its roles/etcd templates, the certificates in
// /etc/ssl/etcd/ssl under its names, the data dir with a member, and a
// kube-apiserver.yaml pointed at those certificates; no etcd.yaml.
func kubesprayNode(t *testing.T, root string) {
	t.Helper()
	unit := "[Unit]\nDescription=etcd\nAfter=network.target\n\n[Service]\nType=notify\nUser=etcd\nEnvironmentFile=/etc/etcd.env\nExecStart=/usr/local/bin/etcd\nNotifyAccess=all\nRestart=always\nRestartSec=10s\nLimitNOFILE=40000\n\n[Install]\nWantedBy=multi-user.target\n"
	env := "# Environment file for etcd v3.5.16\nETCD_DATA_DIR=/var/lib/etcd\nETCD_ADVERTISE_CLIENT_URLS=https://10.0.0.11:2379\nETCD_INITIAL_CLUSTER_TOKEN=k8s_etcd\nETCD_NAME=etcd1\nETCD_TRUSTED_CA_FILE=/etc/ssl/etcd/ssl/ca.pem\nETCD_CERT_FILE=/etc/ssl/etcd/ssl/member-n1.pem\nETCD_KEY_FILE=/etc/ssl/etcd/ssl/member-n1-key.pem\n"
	apiserver := `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.33.4
    command:
    - kube-apiserver
    - --etcd-servers=https://10.0.0.11:2379
    - --etcd-cafile=/etc/ssl/etcd/ssl/ca.pem
    - --etcd-certfile=/etc/ssl/etcd/ssl/node-n1.pem
    - --etcd-keyfile=/etc/ssl/etcd/ssl/node-n1-key.pem
    - --service-cluster-ip-range=10.233.0.0/18
  hostNetwork: true
`
	for p, s := range map[string]string{
		"etc/systemd/system/etcd.service":              unit,
		"etc/etcd.env":                                 env,
		"etc/ssl/etcd/ssl/ca.pem":                      "ca\n",
		"etc/ssl/etcd/ssl/member-n1.pem":               "member\n",
		"etc/ssl/etcd/ssl/member-n1-key.pem":           "member key\n",
		"etc/kubernetes/manifests/kube-apiserver.yaml": apiserver,
		"etc/kubernetes/pki/ca.crt":                    "ca\n",
		"var/lib/etcd/member/snap/db":                  "member db\n",
		"var/lib/kubelet/config.yaml":                  "kind: KubeletConfiguration\n",
	} {
		write(t, filepath.Join(root, p), s, 0o600)
	}
}

// TestPreflightRefusesAHostEtcd (issue 50): a node whose etcd systemd runs
// from the host, as kubespray installs it, is refused before anything
// changes, naming the unit, its environment file and data dir, and
// kube-apiserver's certificates; apply would otherwise move the data dir
// from under etcd.service and start a static-pod etcd beside it. With a
// static-pod etcd too, the refusal names both.
func TestPreflightRefusesAHostEtcd(t *testing.T) {
	b := makeBundle(t)
	recorders(t)
	root := t.TempDir()
	kubesprayNode(t, root)
	_, err := preflightOnly(t, b, root)
	want := "[preflight] etcd on node n1 under --root " + root + " runs as a host service, not as kubeadm's static pod (found the unit /etc/systemd/system/etcd.service, its environment file /etc/etcd.env (ETCD_DATA_DIR=/var/lib/etcd), kube-apiserver's --etcd-cafile=/etc/ssl/etcd/ssl/ca.pem --etcd-certfile=/etc/ssl/etcd/ssl/node-n1.pem --etcd-keyfile=/etc/ssl/etcd/ssl/node-n1-key.pem): node apply supports only the static-pod etcd (kubespray's etcd_deployment_type: kubeadm), and here it would move the data dir from under etcd.service and start a second etcd beside it"
	if !errors.Is(err, nodeops.ErrRefused) || err.Error() != want {
		t.Fatalf("preflight on a host etcd:\n got %v\nwant %s", err, want)
	}
	// Not --preflight-only: refused all the same, and the data dir stays.
	before := tree(t, root, ".")
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); !errors.Is(err, nodeops.ErrRefused) {
		t.Errorf("apply on a host etcd: %v, want a refusal", err)
	}
	if after := tree(t, root, "."); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused apply changed the root")
	}

	// Both: a static-pod etcd as well, and the unit elsewhere on the search
	// path, naming another environment file.
	both := node(t)
	write(t, filepath.Join(both, "lib/systemd/system/etcd.service"), "[Service]\nEnvironmentFile=-/etc/default/etcd\nExecStart=/usr/bin/etcd\n", 0o644)
	write(t, filepath.Join(both, "etc/default/etcd"), "ETCD_DATA_DIR=\"/var/lib/etcd/default\"\n", 0o644)
	_, err = preflightOnly(t, b, both)
	for _, s := range []string{"found the unit /lib/systemd/system/etcd.service, its environment file /etc/default/etcd (ETCD_DATA_DIR=/var/lib/etcd/default))",
		"; /etc/kubernetes/manifests/etcd.yaml is a static-pod etcd too, so two etcds are configured on this node: remove the one that does not run, then run apply again"} {
		if !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), s) {
			t.Errorf("a node with both etcds: the refusal does not say %q:\n%v", s, err)
		}
	}
}

// writeRunbook writes rb as the bundle's runbook.json.
func writeRunbook(t *testing.T, b string, rb *bundle.Runbook) {
	t.Helper()
	data, err := json.MarshalIndent(rb, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(b, bundle.RunbookJSONFile), string(data), 0o600)
}

// TestPreflightChecksTheRunbook (issue 46): a runbook.json beside
// report.json must be the one rebuild wrote with it. Another bundle's, one
// with a node's lines removed or a node added, or one edited any other
// way is refused, naming what differs; the one rebuild wrote passes, and a
// bundle copied without runbook.json is not refused for it.
func TestPreflightChecksTheRunbook(t *testing.T) {
	b, root := makeBundle(t), node(t)
	raw, err := os.ReadFile(filepath.Join(b, bundle.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	good := func() *bundle.Runbook {
		rb := &bundle.Runbook{APIVersion: bundle.APIVersion, Kind: bundle.RunbookKind, ReportSHA256: hex.EncodeToString(sum[:])}
		for _, id := range []string{"apply", "rollback"} {
			rb.Steps = append(rb.Steps, bundle.RunbookStep{ID: id, Level: 2, Title: id, Where: bundle.WhereControlPlane, Items: []bundle.RunbookItem{{Block: &bundle.RunbookBlock{
				ID: id + ".run", Where: bundle.WhereControlPlane, Lines: []bundle.RunbookLine{bundle.NewRunbookLine("snapshift node " + id + " --bundle /root/snapshift-bundle --node n1   # on n1")}}}}})
		}
		rb.Digest = bundle.RunbookDigest(rb)
		return rb
	}
	if out, err := preflightOnly(t, b, root); err != nil || strings.Contains(out, "runbook.json") {
		t.Fatalf("without runbook.json: %v\n%s", err, out)
	}
	writeRunbook(t, b, good())
	if out, err := preflightOnly(t, b, root); err != nil || !strings.Contains(out, "[preflight] runbook.json is the one snapshift rebuild wrote with this report.json") {
		t.Fatalf("the runbook.json rebuild wrote: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name string
		edit func(*bundle.Runbook)
		want string
	}{
		{"another bundle's", func(rb *bundle.Runbook) { rb.ReportSHA256 = strings.Repeat("ab", 32) },
			"runbook.json is another bundle's: it was made with a report.json of sha256 abababababab…, and this bundle's is " + hex.EncodeToString(sum[:])[:12] + "…; use the runbook.json of this bundle"},
		{"a node added", func(rb *bundle.Runbook) {
			blk := rb.Steps[0].Items[0].Block
			blk.Lines = append(blk.Lines, bundle.NewRunbookLine("snapshift node apply --bundle /root/snapshift-bundle --node n9   # on n9"))
		}, "runbook.json was edited after snapshift rebuild wrote it (block apply.run names node n9, which report.json does not hold): run snapshift rebuild again, or put back the runbook.json it wrote"},
		{"a step removed", func(rb *bundle.Runbook) { rb.Steps = rb.Steps[1:] },
			"runbook.json was edited after snapshift rebuild wrote it (step apply is missing)"},
		{"the node's lines removed", func(rb *bundle.Runbook) { rb.Steps[0].Items, rb.Steps[1].Items = nil, nil },
			"(no line is for node n1)"},
		{"a line changed", func(rb *bundle.Runbook) { rb.Steps[0].Items[0].Block.Lines[0].Text += " --timeout 1s" },
			"runbook.json was edited after snapshift rebuild wrote it (its digest no longer matches its content)"},
	} {
		rb := good()
		c.edit(rb) // the digest is left as rebuild wrote it
		writeRunbook(t, b, rb)
		_, err := preflightOnly(t, b, root)
		if !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}
}

// TestNewCAStopsEveryContainer: with a new CA, apply stops every container
// still running once the kubelet is stopped (each trusts the old CA in
// memory: the lab saw kube-proxy on a control-plane node refuse the new
// apiserver's certificate, and the CNI agent there wait for it), after
// the kubelet, so that the kubelet starts them again on the new CA.
func TestNewCAStopsEveryContainer(t *testing.T) {
	b, root := makeBundle(t), node(t)
	bin := filepath.Join(root, "recorder")
	log := filepath.Join(root, "calls.log")
	write(t, filepath.Join(bin, "crictl"), "#!/bin/sh\necho \"crictl $*\" >> "+log+"\n[ \"$*\" = \"ps --quiet --state Running\" ] && printf 'c1\\nc2\\n'\nexit 0\n", 0o755)
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(log)
	stopKubelet := strings.Index(string(calls), "systemctl stop kubelet")
	stop := strings.Index(string(calls), "crictl --timeout 60s stop c1 c2")
	if stop < 0 || stopKubelet < 0 || stop < stopKubelet {
		t.Errorf("apply with a new CA does not stop the running containers after the kubelet:\n%s", calls)
	}
}

// TestStopWhenTheKubeletKeepsTheStaticPods: a kubelet that has not reached
// its apiserver since it started does not stop a static pod whose manifest
// went ("skipping delete because sources aren't ready yet"); the lab's
// deadline scenario met it, every node's timer failing at its stop step.
// Past the grace, the stop step stops the kubelet, then the containers
// with crictl, and goes on; until then it only waits.
func TestStopWhenTheKubeletKeepsTheStaticPods(t *testing.T) {
	b, root := makeBundle(t), node(t)
	bin := filepath.Join(root, "recorder")
	log := filepath.Join(root, "calls.log")
	stopped := filepath.Join(root, "stopped")
	// etcd and kube-apiserver run until crictl stop stops them; the
	// kubelet stops nothing.
	write(t, filepath.Join(bin, "crictl"), `#!/bin/sh
echo "crictl $*" >> `+log+`
case "$*" in
*" stop "*) touch `+stopped+` ;;
"ps --quiet --state Running --name ^etcd\$") [ -e `+stopped+` ] || echo c-etcd ;;
"ps --quiet --state Running --name ^kube-apiserver\$") [ -e `+stopped+` ] || echo c-apiserver ;;
esac
exit 0
`, 0o755)
	var out strings.Builder
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true, Timeout: 4 * time.Second, Out: &out}); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	calls, _ := os.ReadFile(log)
	stopKubelet := strings.Index(string(calls), "systemctl stop kubelet")
	stop := strings.Index(string(calls), "crictl --timeout 30s stop c-etcd c-apiserver")
	if stopKubelet < 0 || stop < stopKubelet {
		t.Errorf("the stop step did not stop the kubelet, then etcd and kube-apiserver with crictl:\n%s", calls)
	}
	if !strings.Contains(out.String(), "the kubelet has not stopped etcd and kube-apiserver after 2s") {
		t.Errorf("apply does not say why it stops the containers itself:\n%s", out.String())
	}
}

package app

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/internal/nodetest"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/manifests"
)

// ---------------------------------------------------------------------------------------------
// More rows for TestBadInputTable: the user mistakes that used to end in exit 1 or in a message
// naming Go identifiers (issue 24), by the documented codes: 2 a bad command line or file, 3 a
// bad input snapshot, 4 a refusal.

// rebuildFile returns the args and prepare of a rebuild run on a config file written into work:
// a valid one-member file on the sample, edited by edit.
func rebuildFile(name string, edit func(cfg, work string) string) (func(in, work string) []string, func(t *testing.T, work string)) {
	args := func(_, work string) []string {
		return []string{"rebuild", "--config", filepath.Join(work, name), "--dry-run"}
	}
	prepare := func(t *testing.T, work string) {
		sample, err := filepath.Abs(samplePath)
		if err != nil {
			t.Fatal(err)
		}
		cfg := "apiVersion: snapshift.io/v1alpha1\nkind: RebuildConfiguration\nsnapshot: " + sample + "\noutput: " + filepath.Join(work, "bundle") +
			"\nnetworking:\n  serviceSubnet: 172.24.0.0/16\netcd:\n  members:\n  - name: cp1\n    peerURL: https://10.0.0.10:2380\n    clientURL: https://10.0.0.10:2379" +
			"\nmanifests:\n  kubernetesVersion: v1.36.3\n"
		if edit != nil {
			cfg = edit(cfg, work)
		}
		writeFile(t, filepath.Join(work, name), cfg)
	}
	return args, prepare
}

// kubeadmManifests copies kubeadm's manifests (manifests/testdata) into work/m.
func kubeadmManifests(t *testing.T, work string) {
	t.Helper()
	src := "../../../manifests/testdata/kubeadm-v1.36.3/ipv4"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "m"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, "m", e.Name()), string(b))
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// replace returns an edit of a rebuild file.
func replace(old, new string) func(cfg, work string) string {
	return func(cfg, _ string) string { return strings.Replace(cfg, old, new, 1) }
}

// rebuildRow is a row for a rebuild file edited by edit.
func rebuildRow(name string, edit func(cfg, work string) string, code int, want string) badRow {
	args, prepare := rebuildFile("rebuild.yaml", edit)
	return badRow{name: name, args: args, prepare: prepare, code: code, want: want}
}

// rulesFileRow is a row for plan with a rules file holding body.
func rulesFileRow(name, body string, want string) badRow {
	return badRow{name: name, code: ExitUsage, want: want,
		args: func(in, work string) []string {
			return []string{"plan", in, "--rules", filepath.Join(work, "rules.yaml")}
		},
		prepare: func(t *testing.T, work string) { writeFile(t, filepath.Join(work, "rules.yaml"), body) }}
}

func restoreWith(extra ...string) func(in, work string) []string {
	return func(in, work string) []string {
		return append([]string{"restore", in, "--name", "m1", "--data-dir", filepath.Join(work, "m1.etcd")}, extra...)
	}
}

func cmdline(args ...string) func(in, work string) []string {
	return func(in, work string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = strings.NewReplacer("IN", in, "WORK", work).Replace(a)
		}
		return out
	}
}

// messageRows are the rows of issue 24, by group.
func messageRows() []badRow {
	var rows []badRow
	for _, group := range [][]badRow{optionRows(), restoreRows(), rebuildRows(), rulesFileRows(), certsManifestsRows(), commandLineRows(), kubectlRows(),
		contradictionRows(), exitCodeRows(), badValueRows(), wordingRows()} {
		rows = append(rows, group...)
	}
	return rows
}

// ruleSet is a valid rules file.
const ruleSet = "apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\nrules:\n- name: x\n  match: {resource: configmaps}\n  delete: true\n"

const newSvc = "172.24.0.0/16"

func optionRows() []badRow {
	return []badRow{
		// Options wrong for this snapshot: exit 2, naming the flag.
		{name: "new service range over the unmoved pod range", args: transformTo("--service-cidr", "10.244.0.0/16"), code: ExitUsage,
			want: "the new service CIDR 10.244.0.0/16 (--service-cidr) overlaps the pod CIDR 10.244.0.0/16, which is not moving"},
		{name: "IPv6 service range for an IPv4 cluster", args: transformTo("--service-cidr", "fd00::/108"), code: ExitUsage,
			want: "the new service CIDR fd00::/108 (--service-cidr) is IPv6"},
		{name: "dual-stack service range added to an IPv4 cluster", args: transformTo("--service-cidr", newSvc+",fd00::/108"), code: ExitUsage,
			want: "(--service-cidr) is IPv6, but the old one (IPv4 192.168.0.0/16) has no IPv6 range"},
		{name: "IPv6 pod range for an IPv4 cluster", args: transformTo("--pod-network-cidr", "fd00:55::/56"), code: ExitUsage,
			want: "the new pod network CIDR fd00:55::/56 (--pod-network-cidr) is IPv6"},
		{name: "new pod range over the unmoved service range", args: transformTo("--pod-network-cidr", "192.168.0.0/16"), code: ExitUsage,
			want: "(--pod-network-cidr) overlaps the service CIDR 192.168.0.0/16, which is not moving"},
		{name: "transform --out a directory with --force fails before the work", code: ExitUsage, want: "--out ",
			args: func(in, work string) []string {
				return []string{"transform", in, "--out", filepath.Join(work, "out.db"), "--force", "--service-cidr", newSvc}
			},
			prepare: func(t *testing.T, work string) {
				if err := os.Mkdir(filepath.Join(work, "out.db"), 0o700); err != nil {
					t.Fatal(err)
				}
			}},
	}
}

func restoreRows() []badRow {
	return []badRow{
		// restore's etcd options.
		{name: "peer URL without a scheme", args: restoreWith("--initial-cluster", "m1=10.0.0.11:2380", "--initial-advertise-peer-urls", "10.0.0.11:2380"),
			code: ExitUsage, want: `--initial-advertise-peer-urls "10.0.0.11:2380" is not a peer URL like https://10.0.0.11:2380`},
		{name: "initial cluster URL without a scheme", args: restoreWith("--initial-cluster", "m1=10.0.0.11:2380", "--initial-advertise-peer-urls", "http://10.0.0.11:2380"),
			code: ExitUsage, want: `--initial-cluster: member "m1"'s peer URL "10.0.0.11:2380" is not a peer URL`},
		{name: "initial cluster without this member", args: restoreWith("--initial-cluster", "m9=http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380"),
			code: ExitUsage, want: `--initial-cluster "m9=http://127.0.0.1:2380" does not name this member "m1"`},
		{name: "revision bump without mark compacted", args: restoreWith("--mark-compacted=false"),
			code: ExitUsage, want: "--bump-revision and --mark-compacted go together"},
		{name: "fused restore with a peer URL without a scheme", code: ExitUsage, want: "--initial-advertise-peer-urls",
			args: restoreWith("--initial-advertise-peer-urls", "10.0.0.11:2380", "--service-cidr", newSvc)},
	}
}

func rebuildRows() []badRow {
	return []badRow{
		// The rebuild file.
		{name: "rebuild without --config", args: cmdline("rebuild"), code: ExitUsage, want: "rebuild needs --config FILE"},
		rebuildRow("rebuild output that is a file", func(cfg, work string) string {
			return strings.Replace(cfg, "output: "+filepath.Join(work, "bundle"), "output: rebuild.yaml", 1)
		}, ExitUsage, "rebuild.yaml is a file: give a directory"),
		// Members that cannot all start (fresh-mistakes audit).
		rebuildRow("rebuild two members of one name", replace("manifests:", "  - name: cp1\n    peerURL: https://10.0.0.11:2380\n    clientURL: https://10.0.0.11:2379\nmanifests:"), ExitUsage,
			"etcd.members[1].name cp1 is etcd.members[0]'s too: give every member its own name"),
		rebuildRow("rebuild two members on one peer URL", replace("manifests:", "  - name: cp2\n    peerURL: https://10.0.0.10:2380\n    clientURL: https://10.0.0.11:2379\nmanifests:"), ExitUsage,
			"etcd.members[1].peerURL https://10.0.0.10:2380 has the address and port of etcd.members[0].peerURL: give each its own"),
		rebuildRow("rebuild client URL on the peer port", replace("clientURL: https://10.0.0.10:2379", "clientURL: https://10.0.0.10:2380"), ExitUsage,
			"etcd.members[0].clientURL https://10.0.0.10:2380 has the address and port of etcd.members[0].peerURL"),
		rebuildRow("rebuild member without a name", replace("- name: cp1", "- name: \"\""), ExitUsage,
			"etcd.members[0].name is missing: give every member a name (etcd's --name)"),
		rebuildRow("rebuild two unknown keys", replace("networking:\n  serviceSubnet", "out: x\nnetworking:\n  podSubnett: 10.55.0.0/16\n  serviceSubnet"), ExitUsage,
			"out (line 5): unknown key, did you mean output?; networking.podSubnett (line 7): unknown key, did you mean podSubnet?"),
		rebuildRow("rebuild kubernetesVersion without v", replace("v1.36.3", "1.36"), ExitUsage, `manifests.kubernetesVersion "1.36" is not a version like v1.36.3`),
		rebuildRow("rebuild key in the wrong case", replace("peerURL", "peerUrl"), ExitUsage,
			"etcd.members[0].peerUrl (line 10): unknown key, did you mean peerURL? (keys are case-sensitive)"),
		rebuildRow("rebuild key all in lower case", replace("serviceSubnet", "servicesubnet"), ExitUsage,
			"networking.servicesubnet (line 6): unknown key, did you mean serviceSubnet?"),
		rebuildRow("rebuild misspelt key", replace("kubernetesVersion", "kubernetesVerison"), ExitUsage,
			"manifests.kubernetesVerison (line 13): unknown key, did you mean kubernetesVersion?"),
		rebuildRow("rebuild unknown top-level key", replace("networking:", "network:"), ExitUsage, "network (line 5): unknown key, did you mean networking?"),
		rebuildRow("rebuild peer URL without a scheme", replace("peerURL: https://10.0.0.10:2380", "peerURL: 10.0.0.10:2380"), ExitUsage,
			`etcd.members[0].peerURL "10.0.0.10:2380" is not an http(s) URL`),
		rebuildRow("rebuild relative snapshot path resolves beside the file", func(cfg, _ string) string {
			return regexp.MustCompile(`snapshot: .*`).ReplaceAllString(cfg, "snapshot: in.db")
		}, ExitBadInput, "does not exist"),
		rebuildRow("a rules file given to rebuild --config", func(string, string) string { return ruleSet }, ExitUsage,
			"is a RuleSet (a rules file): list it under rules: in a RebuildConfiguration"),
		rebuildRow("rebuild service range over the unmoved pod range", replace("172.24.0.0/16", "10.244.0.0/16"), ExitUsage,
			"the new service CIDR 10.244.0.0/16 (networking.serviceSubnet) overlaps the pod CIDR"),
		rebuildRow("rebuild new service range too small", replace("172.24.0.0/16", "172.24.0.0/28"), ExitRefused,
			"too small to keep 6 Services at their offsets (offsets 775 to 65534; e.g. "),
		rebuildRow("rebuild certificate SAN that is no name", replace("manifests:", "pki:\n  certSANs: [\"bad_name!\"]\nmanifests:"), ExitUsage,
			`pki.certSANs: "bad_name!" is neither an IP address nor a DNS name`),
		rebuildRow("rebuild DNS domain that is no name", replace("serviceSubnet: 172.24.0.0/16", "serviceSubnet: 172.24.0.0/16\n  dnsDomain: \"bad domain\""), ExitUsage,
			`networking.dnsDomain: "bad domain" is not a valid DNS name`),
		rebuildRow("rebuild pki.source without a CA", func(cfg, work string) string {
			return strings.Replace(cfg, "manifests:", "pki:\n  source: "+work+"\nmanifests:", 1)
		}, ExitUsage, "has no ca.crt: give kubeadm's certificate directory"),
		rebuildRow("rebuild manifests.source that is not a directory", replace("manifests:\n", "manifests:\n  source: nowhere\n"), ExitUsage,
			"/nowhere is not a directory: give kubeadm's manifests directory"),
		rebuildRow("rebuild CNI the rules do not know", replace("serviceSubnet: 172.24.0.0/16", "serviceSubnet: 172.24.0.0/16\n  leaveCNIState: [weave]"), ExitUsage,
			`networking.leaveCNIState takes calico or cilium, not "weave"`),
		{name: "dry-run with a server", code: ExitUsage, want: "--dry-run is a plain switch",
			args: func(_, work string) []string {
				return []string{"rebuild", "--config", filepath.Join(work, "rebuild.yaml"), "--dry-run=server"}
			}},
	}
}

func rulesFileRows() []badRow {
	return []badRow{
		// The rules file.
		rulesFileRow("a rebuild file given as --rules", "apiVersion: snapshift.io/v1alpha1\nkind: RebuildConfiguration\nsnapshot: x\n",
			"is a RebuildConfiguration: give it to snapshift rebuild --config"),
		rulesFileRow("rules file unknown match key", strings.Replace(ruleSet, "resource: configmaps", "resource: configmaps, namespace: [a]", 1),
			"rules[0].match.namespace (line 5): unknown key, did you mean namespaces?"),
		rulesFileRow("rules file key in the wrong case", strings.Replace(ruleSet, "delete: true", "Delete: true", 1),
			"rules[0].Delete (line 6): unknown key, did you mean delete? (keys are case-sensitive)"),
	}
}

func certsManifestsRows() []badRow {
	return []badRow{
		// certs and manifests.
		{name: "certs --renew without a CA", code: ExitUsage, want: "ca.crt and ca.key: not both in WORK: this operation reuses the CA in --cert-dir (kubeadm's /etc/kubernetes/pki); --all makes a new PKI",
			args: cmdline("certs", "--renew", "apiserver", "--cert-dir", "WORK", "--service-cidr", newSvc, "--old-service-cidr", "192.168.0.0/16")},
		{name: "certs --renew with a --cert-dir that does not exist", code: ExitUsage, want: "--cert-dir WORK/nopki does not exist: give the directory that holds the cluster's ca.crt and ca.key",
			args: cmdline("certs", "--renew", "apiserver", "--cert-dir", "WORK/nopki", "--service-cidr", newSvc, "--old-service-cidr", "192.168.0.0/16")},
		{name: "control-plane endpoint given as a URL", code: ExitUsage, want: `--control-plane-endpoint "https://10.0.0.50:6443" is not host[:port]: drop the https:// (give 10.0.0.50:6443)`,
			args: cmdline("transform", "IN", "--out", "WORK/out.db", "--control-plane-endpoint", "https://10.0.0.50:6443")},
		{name: "plan without rules under an etcd prefix that holds no cluster", code: ExitUsage,
			want: `the snapshot keeps the cluster's objects under "/registry/", not "/kubernetes.io/": give --etcd-prefix /registry`,
			args: cmdline("plan", "IN", "--etcd-prefix", "/kubernetes.io")},
		{name: "inspect under an etcd prefix that holds no cluster", code: ExitUsage,
			want: `the snapshot keeps the cluster's objects under "/registry/", not "/kubernetes.io/": give --etcd-prefix /registry`,
			args: cmdline("inspect", "IN", "--etcd-prefix", "/kubernetes.io")},
		{name: "encryption configuration that is a directory", code: ExitUsage, want: "encryption configuration WORK is a directory: give the file kube-apiserver's --encryption-provider-config names",
			args: cmdline("plan", "IN", "--encryption-config", "WORK")},
		{name: "certs --renew apiserver without the old range", code: ExitUsage, want: "renewing the apiserver certificate: --old-service-cidr is required",
			args: cmdline("certs", "--renew", "apiserver", "--cert-dir", "WORK", "--service-cidr", newSvc)},
		{name: "certs with a bad advertise address", code: ExitUsage, want: "--apiserver-advertise-address",
			args: cmdline("certs", "--all", "--cert-dir", "WORK/pki", "--apiserver-advertise-address", "10.0.0.300")},
		{name: "certs with a bad extra SAN", code: ExitUsage, want: `--apiserver-cert-extra-sans: "bad_name!" is neither an IP address nor a DNS name`,
			args: cmdline("certs", "--all", "--cert-dir", "WORK/pki", "--apiserver-cert-extra-sans", "bad_name!")},
		{name: "certs with an etcd member without a scheme", code: ExitUsage, want: `--etcd-member: member "m1"`,
			args: cmdline("certs", "--renew", "etcd", "--cert-dir", "WORK", "--etcd-member", "m1=10.0.0.1:2380")},
		{name: "manifests --generate without a version", code: ExitUsage, want: "generating manifests: --kubernetes-version is required",
			args: cmdline("manifests", "--generate", "--out-dir", "WORK/m")},
		{name: "manifests --generate with a version without v", code: ExitUsage, want: `--kubernetes-version "1.36" is not a version like v1.36.3`,
			args: cmdline("manifests", "--generate", "--out-dir", "WORK/m", "--kubernetes-version", "1.36")},
		{name: "manifests --generate without an address", code: ExitUsage, want: `--apiserver-advertise-address "" is not an IP address`,
			args: cmdline("manifests", "--generate", "--out-dir", "WORK/m", "--kubernetes-version", "v1.36.3")},

		{name: "manifests from a directory without manifests", code: ExitUsage, want: "--manifest-dir: no kubeadm static Pod manifest in",
			args: cmdline("manifests", "--manifest-dir", "WORK", "--service-cidr", newSvc)},
		{name: "manifests with a malformed service CIDR", code: ExitUsage, want: `--service-cidr: "bad" is not a CIDR`, prepare: kubeadmManifests,
			args: cmdline("manifests", "--manifest-dir", "WORK/m", "--out-dir", "WORK/new", "--service-cidr", "bad")},
		{name: "manifests with a relative etcd data dir", code: ExitUsage, want: `--etcd-data-dir: "rel/dir" is not a clean absolute path`, prepare: kubeadmManifests,
			args: cmdline("manifests", "--manifest-dir", "WORK/m", "--out-dir", "WORK/new", "--etcd-data-dir", "rel/dir")},
		{name: "manifests whose initial cluster leaves the member out", code: ExitRefused, want: `--initial-cluster "zz=http://10.0.0.9:2380" must list member "a"`,
			prepare: kubeadmManifests,
			args:    cmdline("manifests", "--manifest-dir", "WORK/m", "--out-dir", "WORK/new", "--etcd-member", "a=http://10.0.0.1:2380", "--initial-cluster", "zz=http://10.0.0.9:2380")},
	}
}

func commandLineRows() []badRow {
	return []badRow{
		// The command line itself.
		{name: "unknown output format", args: cmdline("inspect", "IN", "-o", "xml"), code: ExitUsage, want: `--output must be text, json or yaml, not "xml"`},
		{name: "rebuild with its file as an argument", args: cmdline("rebuild", "WORK/rebuild.yaml"), code: ExitUsage, want: "rebuild takes its file as a flag: snapshift rebuild --config WORK/rebuild.yaml"},
		{name: "version with an argument", args: cmdline("version", "now"), code: ExitUsage, want: "version takes no arguments"},
		{name: "unknown command", args: cmdline("frobnicate"), code: ExitUsage, want: `unknown command "frobnicate"`},
		{name: "help for an unknown command", args: cmdline("help", "frobnicate"), code: ExitUsage, want: `help: no command "frobnicate" (see snapshift help)`},
		{name: "encryption config that does not exist", args: transformTo("--encryption-config", "/nonexistent/enc.yaml"), code: ExitUsage,
			want: "--encryption-config"},
	}
}

// miniBundle writes a bundle directory whose report.json names the nodes cp1, cp2 and master-a (enough for
// the command line's checks, which come before nodeops reads the bundle).
func miniBundle(t *testing.T, work string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(work, "bundle"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "bundle", "report.json"), `{"nodes": [{"name": "cp1"}, {"name": "cp2"}, {"name": "master-a"}]}`)
}

// realBundle runs a one-member rebuild of the sample into work/bundle (node cp1 at 10.0.0.10,
// an address this host does not have: apply's preflight refuses).
func realBundle(t *testing.T, work string) {
	t.Helper()
	_, prepare := rebuildFile("rebuild-for-bundle.yaml", nil)
	dir := t.TempDir()
	prepare(t, dir)
	if r := run(t, "rebuild", "--config", filepath.Join(dir, "rebuild-for-bundle.yaml"), "--quiet"); r.code != ExitOK {
		t.Fatalf("rebuild: exit %d: %s", r.code, r.stderr)
	}
	if err := os.Rename(filepath.Join(dir, "bundle"), filepath.Join(work, "bundle")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "root"), 0o700); err != nil {
		t.Fatal(err)
	}
}

// realBundleAndTools is realBundle with systemctl, crictl and ip in PATH (recorders that do nothing):
// preflight's refusal then names what it names on any machine.
func realBundleAndTools(t *testing.T, work string) {
	t.Helper()
	realBundle(t, work)
	bin := t.TempDir()
	nodetest.Recorders(t, bin, "")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// kubectlRows are issue 35's: every command's mistakes answered as kubectl answers them (one exit
// code per kind of mistake, the README's table: 2 a bad command line or file, 4 a refusal of
// this host's or snapshot's state), with what was probably meant.
func kubectlRows() []badRow {
	const typeRules = "apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\nrules:\n- name: x\n  match: {resource: deployments}\n  mergePatch: {spec: {replicas: three}}\n"
	return []badRow{
		{name: "misspelt flag", args: cmdline("plan", "IN", "--serivce-cidr", newSvc), code: ExitUsage,
			want: "unknown flag --serivce-cidr; did you mean --service-cidr?"},
		{name: "another tool's name for a flag", args: cmdline("plan", "IN", "--pod-cidr", "10.55.0.0/16"), code: ExitUsage,
			want: "unknown flag --pod-cidr; did you mean --pod-network-cidr?"},
		{name: "k3s's name for the pod range flag", args: cmdline("transform", "IN", "--out", "WORK/o.db", "--cluster-cidr", "10.55.0.0/16"), code: ExitUsage,
			want: "unknown flag --cluster-cidr; did you mean --pod-network-cidr?"},
		{name: "misspelt command", args: cmdline("tranform", "IN"), code: ExitUsage, want: `unknown command "tranform" for "snapshift"; did you mean transform?`},
		{name: "node without apply or rollback", args: cmdline("node", "--bundle", "WORK", "--node", "cp1"), code: ExitUsage,
			want: "snapshift node needs a subcommand first: apply, rollback, confirm or rollback-if-unconfirmed"},
		{name: "misspelt node subcommand", args: cmdline("node", "aply", "--bundle", "WORK"), code: ExitUsage,
			want: `unknown command "aply" for "snapshift node"; did you mean apply?`},
		{name: "flag value that does not parse", args: cmdline("node", "apply", "--timeout", "soon"), code: ExitUsage,
			want: `invalid value "soon" for flag --timeout`},
		{name: "kept Service that does not exist", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--keep-service-ip", "kube-system/kube-dnz"), code: ExitUsage,
			want: "--keep-service-ip kube-system/kube-dnz: no such Service with a cluster IP in the snapshot; did you mean kube-system/kube-dns?"},
		{name: "get of a missing key", args: cmdline("get", "IN", "/registry/services/specs/kube-system/kube-dnz"), code: ExitUsage,
			want: "/registry/services/specs/kube-system/kube-dnz not found in the snapshot (or deleted); did you mean /registry/services/specs/kube-system/kube-dns? (snapshift ls "},
		{name: "get of a missing object by resource", args: cmdline("get", "IN", "svc/kube-system/kube-dnz"), code: ExitUsage,
			want: "did you mean svc/kube-system/kube-dns? (snapshift ls "},
		{name: "ls of an unknown resource", args: cmdline("ls", "IN", "svcs/"), code: ExitUsage, want: `"svcs" is no resource kube-apiserver serves (did you mean`},
		{name: "verify with a malformed range", args: cmdline("verify", "IN", "--service-cidr", "172.24.0.0/33"), code: ExitUsage, want: "--service-cidr"},
		{name: "rules naming no rule", args: cmdline("rules", "service-cdir"), code: ExitUsage, want: `rules: no rule "service-cdir"; did you mean service-cidr? (snapshift rules lists every one)`},
		{name: "completion for an unknown shell", args: cmdline("completion", "tcsh"), code: ExitUsage, want: `"tcsh" is not bash, zsh or fish`},
		rebuildRow("rebuild value of the wrong type", replace("serviceSubnet: 172.24.0.0/16", "serviceSubnet: [172.24.0.0/16]"), ExitUsage,
			"networking.serviceSubnet (line 6): takes a string, not a list"),
		rebuildRow("rebuild encryptionConfig that does not exist", replace("networking:", "encryptionConfig: /nonexistent/enc.yaml\nnetworking:"), ExitUsage,
			"encryptionConfig: encryption configuration /nonexistent/enc.yaml does not exist: give the file kube-apiserver's --encryption-provider-config names (remove the line"),
		rulesFileRow("rules patch value of the wrong type", typeRules,
			`sets spec.replicas of deploy/demo/web to a string, but that field takes a whole number`),
		{name: "node apply with a directory that is no bundle", args: cmdline("node", "apply", "--bundle", "WORK", "--node", "cp1"), code: ExitUsage,
			want: "--bundle WORK holds no report.json: give the output directory of snapshift rebuild"},
		{name: "node rollback with a bundle that does not exist", args: cmdline("node", "rollback", "--bundle", "WORK/nowhere", "--node", "cp1"), code: ExitUsage,
			want: "--bundle WORK/nowhere is not a directory"},
		{name: "node apply with a node the bundle does not have", args: cmdline("node", "apply", "--bundle", "WORK/bundle", "--node", "cp3"), code: ExitUsage,
			prepare: miniBundle, want: `--node "cp3" is not a node of the bundle WORK/bundle; did you mean cp1 or cp2? (it has cp1, cp2, master-a)`},
		{name: "node apply whose preflight fails", args: cmdline("node", "apply", "--bundle", "WORK/bundle", "--node", "cp1", "--root", "WORK/root", "--preflight-only", "--quiet"),
			code: ExitRefused, prepare: realBundleAndTools, want: "[preflight] 3 checks failed, nothing was changed: (1) this host does not have node cp1's address 10.0.0.10"},
		{name: "node apply with a negative deadline", args: cmdline("node", "apply", "--bundle", "WORK/bundle", "--node", "cp1", "--rollback-after", "-5m"), code: ExitUsage,
			prepare: miniBundle, want: "--rollback-after -5m0s: give a duration of at least a second"},
		{name: "node confirm without a backup", args: cmdline("node", "confirm", "--bundle", "WORK/bundle", "--node", "cp1", "--root", "WORK/root"),
			code: ExitRefused, prepare: realBundle, want: "no apply of this bundle on this node"},
		{name: "node apply on an empty root", args: cmdline("node", "apply", "--bundle", "WORK/bundle", "--node", "cp1", "--root", "WORK/root", "--preflight-only", "--quiet"),
			code: ExitRefused, prepare: realBundleAndTools, want: "(2) no /etc/kubernetes under --root WORK/root (a wrong --root, or not control-plane node cp1); " +
				"(3) no etcd data dir /var/lib/etcd under --root WORK/root, where report.json says etcd keeps it"},
		{name: "node rollback without a backup", args: cmdline("node", "rollback", "--bundle", "WORK/bundle", "--node", "cp1", "--root", "WORK/root"),
			code: ExitRefused, prepare: realBundle, want: "no backup of this bundle on this node"},
		{name: "clean of a directory that does not exist", args: cmdline("clean", "WORK/nowhere"), code: ExitUsage,
			want: "clean: WORK/nowhere does not exist"},
		{name: "clean of a file", args: cmdline("clean", "IN"), code: ExitUsage, want: "is a file: give the directory that holds it"},
		{name: "a --tmp-dir that does not exist", input: zippedSample(nil), args: cmdline("inspect", "IN", "--tmp-dir", "WORK/nowhere"), code: ExitUsage,
			want: "--tmp-dir WORK/nowhere does not exist: create it, or leave the flag out"},
		{name: "an output directory that does not exist", args: cmdline("transform", "IN", "--out", "WORK/nowhere/out.db", "--service-cidr", newSvc), code: ExitUsage,
			want: "output directory WORK/nowhere does not exist: create it first (mkdir -p WORK/nowhere)"},
		{name: "an output directory that is a file", args: cmdline("transform", "IN", "--out", "IN/out.db"), code: ExitUsage,
			want: "is not a directory"},
		{name: "an empty range", args: cmdline("plan", "IN", "--service-cidr", ""), code: ExitUsage,
			want: "--service-cidr is empty: give it a value (see snapshift plan --help) or leave the flag out"},
		{name: "an empty range with =", args: cmdline("transform", "IN", "--out", "WORK/o.db", "--pod-network-cidr="), code: ExitUsage,
			want: "--pod-network-cidr is empty"},
		{name: "a control-plane node the snapshot does not record", args: cmdline("plan", "IN", "--control-plane-address", "cpX=10.1.0.10"), code: ExitUsage,
			want: `--control-plane-address cpX=10.1.0.10: the snapshot records no node "cpX"; did you mean cp1? (its nodes: cp1, `},
	}
}

// contradictionRows are issue 52's first item: a command line that says two things is refused
// (exit 2) naming both, on every command, whatever form the flags are given in; and a misspelt
// name is never suggested back.
func contradictionRows() []badRow {
	const u1, u2 = "http://10.0.0.1:2380", "http://10.0.0.2:2380"
	return []badRow{
		{name: "a single-value flag given twice", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--service-cidr", "172.25.0.0/16"), code: ExitUsage,
			want: "--service-cidr is given twice, as 172.24.0.0/16 and 172.25.0.0/16: it takes one value; give it once"},
		{name: "a single-value flag given twice, with = and after the argument", args: cmdline("transform", "--pod-network-cidr=10.55.0.0/16", "IN", "--out", "WORK/o.db", "--pod-network-cidr", "10.56.0.0/16"),
			code: ExitUsage, want: "--pod-network-cidr is given twice, as 10.55.0.0/16 and 10.56.0.0/16"},
		{name: "a flag and its alias with two values", args: cmdline("inspect", "IN", "-o", "json", "--output=text"), code: ExitUsage,
			want: "--output is given twice, as -o json and --output text: it takes one value; give it once"},
		{name: "a switch set and unset", args: restoreWith("--mark-compacted=false", "--mark-compacted"), code: ExitUsage,
			want: "--mark-compacted is given twice, as --mark-compacted=false and --mark-compacted: give it once"},
		{name: "a subcommand's flag given twice", args: cmdline("node", "apply", "--bundle", "WORK", "--node", "cp1", "--bundle", "WORK/other"), code: ExitUsage,
			want: "--bundle is given twice, as WORK and WORK/other"},
		{name: "a duration given three times", args: cmdline("cluster", "check", "--bundle", "WORK", "--timeout", "5m", "--timeout", "300s", "--timeout", "1h"), code: ExitUsage,
			want: "--timeout is given 3 times, as 5m, 300s and 1h"},
		{name: "a rebuild flag given twice", args: cmdline("rebuild", "--config", "WORK/a.yaml", "--config", "WORK/b.yaml"), code: ExitUsage,
			want: "--config is given twice, as WORK/a.yaml and WORK/b.yaml"},
		{name: "two addresses for one control-plane node", args: cmdline("plan", "IN", "--control-plane-address", "cp1=10.1.0.10", "--control-plane-address", "cp1=10.1.0.11"),
			code: ExitUsage, want: "--control-plane-address gives node cp1 two addresses, 10.1.0.10 and 10.1.0.11: give each node one"},
		{name: "two addresses for one control-plane node in one value", args: cmdline("plan", "IN", "--control-plane-address", "cp1=10.1.0.10,cp1=10.1.0.11"),
			code: ExitUsage, want: "--control-plane-address gives node cp1 two addresses"},
		{name: "the WAL dir is the data dir", args: cmdline("restore", "IN", "--name", "m1", "--data-dir", "WORK/m1.etcd", "--wal-dir", "WORK/m1.etcd"), code: ExitUsage,
			want: "--wal-dir WORK/m1.etcd is the --data-dir itself: give the WAL a directory of its own, or leave --wal-dir out", notWant: "--force"},
		{name: "the WAL dir inside the data dir", args: cmdline("restore", "IN", "--name", "m1", "--data-dir", "WORK/m1.etcd", "--wal-dir", "WORK/m1.etcd/member/wal"), code: ExitUsage,
			want: "--wal-dir WORK/m1.etcd/member/wal is inside the --data-dir WORK/m1.etcd"},
		{name: "a DNS Service the snapshot does not hold", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--dns-service", "kube-system/kube-dnz"), code: ExitUsage,
			want: "--dns-service kube-system/kube-dnz: no such Service in the snapshot; did you mean kube-system/kube-dns?"},
		{name: "a DNS bridge for a misspelt DNS Service", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--dns-service", "kube-system/kube-dnz", "--dns-bridge"),
			code: ExitUsage, want: "did you mean kube-system/kube-dns?", notWant: "--keep-service-ip kube-system/kube-dnz"},
		{name: "a DNS bridge without the DNS Service kept", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--dns-bridge"), code: ExitUsage,
			want: "--dns-bridge bridges a kept DNS Service: add --keep-service-ip kube-system/kube-dns"},
		{name: "verify of a DNS Service the snapshot does not hold", args: cmdline("verify", "IN", "--service-cidr", "192.168.0.0/16", "--dns-service", "kube-system/kube-dnz"),
			code: ExitUsage, want: "--dns-service kube-system/kube-dnz: no such Service in the snapshot; did you mean kube-system/kube-dns?"},

		// restore: the member, its peer URLs and the initial cluster, in the flags' words.
		{name: "an advertise URL the initial cluster does not list", args: restoreWith("--initial-cluster", "m1="+u1, "--initial-advertise-peer-urls", u2), code: ExitUsage,
			want:    "--initial-advertise-peer-urls " + u2 + " is not what --initial-cluster lists for member m1 (" + u1 + "): give --initial-advertise-peer-urls " + u1 + ", or change m1's entry in --initial-cluster",
			notWant: "resolved urls"},
		{name: "two advertise URLs against one", args: restoreWith("--initial-cluster", "m1="+u1, "--initial-advertise-peer-urls", u1+","+u2), code: ExitUsage,
			want: "--initial-advertise-peer-urls " + u1 + "," + u2 + " is not what --initial-cluster lists for member m1 (" + u1 + ")"},
		{name: "one advertise URL against two", args: restoreWith("--initial-cluster", "m1="+u1+",m1="+u2, "--initial-advertise-peer-urls", u1), code: ExitUsage,
			want: "give --initial-advertise-peer-urls " + u1 + "," + u2, notWant: "len("},
		// Without --initial-advertise-peer-urls the member's entry is its default (TestRestore).
		{name: "an advertise URL against the initial cluster", args: restoreWith("--initial-cluster", "m1="+u1, "--initial-advertise-peer-urls", "http://localhost:2380"), code: ExitUsage,
			want: "--initial-advertise-peer-urls http://localhost:2380 is not what --initial-cluster lists for member m1"},
		{name: "a member name the initial cluster does not have", args: restoreWith("--initial-cluster", "cp1="+u1, "--initial-advertise-peer-urls", u1), code: ExitUsage,
			want: `--initial-cluster "cp1=` + u1 + `" does not name this member "m1": add m1=` + u1 + ` to --initial-cluster, or give --name one of its members (cp1)`},
		{name: "two members on one peer URL", args: restoreWith("--initial-cluster", "m1="+u1+",m2="+u1, "--initial-advertise-peer-urls", u1), code: ExitUsage,
			want: "--initial-cluster gives the peer URL " + u1 + " to both m1 and m2: every member has peer URLs of its own", notWant: "identical ID"},
		{name: "a peer URL with a path", args: restoreWith("--initial-cluster", "m1="+u1, "--initial-advertise-peer-urls", u1+"/"), code: ExitUsage,
			want: `--initial-advertise-peer-urls "` + u1 + `/" is not a peer URL like https://10.0.0.11:2380`},
		{name: "an initial cluster entry without a URL", args: restoreWith("--initial-cluster", "m1", "--initial-advertise-peer-urls", u1), code: ExitUsage,
			want: `--initial-cluster "m1": "m1" is not NAME=PEER_URL`},
	}
}

// exitCodeRows are issue 52's fourth item: one exit code per kind of mistake on every command
// (README's table, exitCodes), with what was probably meant for a misspelt subcommand, help topic or
// value from a list.
func exitCodeRows() []badRow {
	noTrailer := sampleWith(func(_ *testing.T, d []byte) []byte { return d[:len(d)-32] })
	return []badRow{
		// Words that name nothing: 2, with the nearest.
		{name: "a misspelt cluster subcommand", args: cmdline("cluster", "restrat", "--bundle", "WORK"), code: ExitUsage,
			want: `unknown command "restrat" for "snapshift cluster"; did you mean restart?`, notWant: "No help topic"},
		{name: "two letters swapped in a command", args: cmdline("plna", "IN"), code: ExitUsage, want: `unknown command "plna" for "snapshift"; did you mean plan?`},
		{name: "help for a misspelt command", args: cmdline("help", "plna"), code: ExitUsage, want: `help: no command "plna"; did you mean plan?`},
		{name: "help for a misspelt subcommand", args: cmdline("help", "cluster", "restrat"), code: ExitUsage,
			want: `help: snapshift cluster has no subcommand "restrat"; did you mean restart?`},
		{name: "help for a subcommand of a command without any", args: cmdline("help", "plan", "apply"), code: ExitUsage,
			want: `help: snapshift plan has no subcommands, not "apply"`},
		{name: "a misspelt --renew", args: cmdline("certs", "--renew", "apisever", "--cert-dir", "WORK"), code: ExitUsage,
			want: `--renew "apisever" is not apiserver or etcd; did you mean apiserver?`},
		{name: "a misspelt --output", args: cmdline("ls", "IN", "-o", "yml"), code: ExitUsage, want: `--output must be text, json or yaml, not "yml"; did you mean yaml?`},
		{name: "an --output the command does not have", args: cmdline("get", "IN", "/registry/services/specs/default/kubernetes", "-o", "text"), code: ExitUsage,
			want: `--output must be yaml or json, not "text"`},
		{name: "a misspelt --writer", args: transformTo("--writer", "bulkk"), code: ExitUsage, want: `--writer "bulkk" is neither bulk nor bbolt; did you mean bulk?`},
		{name: "a misspelt --webhooks", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--webhooks", "ignor"), code: ExitUsage,
			want: `--webhooks takes "list" or "ignore", not "ignor"; did you mean ignore?`},
		{name: "a misspelt --leave-cni-state", args: cmdline("plan", "IN", "--pod-network-cidr", "10.55.0.0/16", "--leave-cni-state", "calcio"), code: ExitUsage,
			want: `--leave-cni-state takes calico or cilium, not "calcio"; did you mean calico?`},
		{name: "a misspelt --encryption-algorithm", args: cmdline("certs", "--all", "--cert-dir", "WORK/pki", "--encryption-algorithm", "RSA2048"), code: ExitUsage,
			want: `--encryption-algorithm "RSA2048" is not RSA-2048, RSA-3072, RSA-4096, ECDSA-P256 or ECDSA-P384; did you mean RSA-2048?`},
		{name: "a misspelt shell", args: cmdline("completion", "fsh"), code: ExitUsage, want: `completion: shell "fsh" is not bash, zsh or fish; did you mean zsh or fish?`},

		// Values of the wrong type: 2, with the form wanted.
		{name: "a negative revision bump", args: restoreWith("--bump-revision", "-5"), code: ExitUsage,
			want: `invalid value "-5" for flag --bump-revision: want a whole number, 0 or more`, notWant: "parse error"},
		{name: "a switch given a value", args: cmdline("inspect", "IN", "--skip-hash-check=maybe"), code: ExitUsage,
			want: "--skip-hash-check is a switch: give it alone, or as --skip-hash-check=false, not --skip-hash-check=maybe"},
		{name: "a flag without its value", args: cmdline("version", "-o"), code: ExitUsage, want: "-o needs a value (see snapshift version --help)"},
		{name: "a certificate lifetime in years", args: cmdline("certs", "--all", "--cert-dir", "WORK/pki", "--certificate-validity-period", "1y"), code: ExitUsage,
			want: `invalid value "1y" for flag --certificate-validity-period: want a duration such as 30s, 5m or 1h`},

		// Arguments and files: 2 for what a flag names, 3 for the input.
		{name: "get without a key", args: cmdline("get", "IN"), code: ExitUsage, want: "get needs SNAPSHOT and KEY (got one, IN)"},
		{name: "ls with too many arguments", args: cmdline("ls", "IN", "/registry/", "x"), code: ExitUsage, want: "ls needs SNAPSHOT and an optional PREFIX"},
		{name: "inspect of a snapshot that does not exist", args: cmdline("inspect", "WORK/nope.db"), code: ExitBadInput, want: "snapshot WORK/nope.db: does not exist"},
		{name: "ls of a snapshot without its trailer", input: noTrailer, args: cmdline("ls", "IN"), code: ExitBadInput, want: "has no sha256 trailer"},
		rebuildRow("rebuild of a snapshot without its trailer", func(cfg, work string) string {
			b, err := os.ReadFile(samplePath)
			if err == nil {
				err = os.WriteFile(filepath.Join(work, "raw.db"), b[:len(b)-32], 0o600)
			}
			if err != nil {
				panic(err)
			}
			return regexp.MustCompile(`snapshot: .*`).ReplaceAllString(cfg, "snapshot: raw.db")
		}, ExitBadInput, "it is truncated, or a raw member/snap/db that needs skipHashCheck"),
		{name: "verify of a data dir that does not exist", args: cmdline("verify", "--data-dir", "WORK/nowhere"), code: ExitBadInput,
			want: "data dir WORK/nowhere: does not exist"},
		{name: "verify of a directory that is no data dir", args: cmdline("verify", "--data-dir", "WORK"), code: ExitBadInput,
			want: "data dir WORK: holds no member directory: it is no etcd data dir"},
		{name: "verify of a snapshot as a data dir", args: cmdline("verify", "--data-dir", "IN"), code: ExitBadInput,
			want: "is a file, not a member's data dir (a snapshot file is verify's argument, not --data-dir)"},
		{name: "a rules file that does not exist", args: cmdline("plan", "IN", "--rules", "WORK/nope.yaml"), code: ExitUsage,
			want: "--rules: rules file WORK/nope.yaml does not exist"},
		{name: "a rebuild file that does not exist", args: cmdline("rebuild", "--config", "WORK/nope.yaml"), code: ExitUsage,
			want: "rebuild configuration WORK/nope.yaml does not exist: give a RebuildConfiguration file"},
		{name: "a directory as the rebuild file", args: cmdline("rebuild", "--config", "WORK"), code: ExitUsage,
			want: "rebuild configuration WORK is a directory: give the RebuildConfiguration file"},
		{name: "a manifests directory that does not exist", args: cmdline("manifests", "--manifest-dir", "WORK/nowhere", "--service-cidr", newSvc), code: ExitUsage,
			want: "--manifest-dir WORK/nowhere does not exist: give kubeadm's manifests directory (or --generate to write new manifests)"},
		{name: "a file as the manifests directory", args: cmdline("manifests", "--manifest-dir", "IN", "--service-cidr", newSvc), code: ExitUsage,
			want: "is a file: give kubeadm's manifests directory"},

		// Options this snapshot cannot take: 2, as transform's wrong --etcd-prefix.
		{name: "verify under a wrong --etcd-prefix", args: cmdline("verify", "IN", "--service-cidr", "192.168.0.0/16", "--etcd-prefix", "/registry"), code: ExitUsage,
			want: `the snapshot keeps the cluster's objects under "/kubernetes.io/", not "/registry/": give --etcd-prefix /kubernetes.io`,
			input: func(t *testing.T, dir string) string {
				return testfile.RewriteLiveKV(t, samplePath, filepath.Join(dir, "in.db"), func(k string, v []byte) (string, []byte, error) {
					return strings.Replace(k, "/registry/", "/kubernetes.io/", 1), v, nil
				})
			}},
		{name: "a member name with a comma", args: cmdline("restore", "IN", "--name", "cp1,cp2", "--data-dir", "WORK/m1.etcd"), code: ExitUsage,
			want: `--name "cp1,cp2" cannot hold '=', ',' or spaces: --initial-cluster lists members as NAME=PEER_URL,...`},
	}
}

// badValueRows are issue 52's tenth item: values no cluster can use, refused with exit 2 naming the
// flag or key, the value and what to give instead.
func badValueRows() []badRow {
	const fix = ": give a range of ordinary unicast addresses (not loopback, link-local or multicast)"
	var rows []badRow
	for _, c := range []struct{ cidr, why string }{
		{"127.0.0.0/16", "the loopback range 127.0.0.0/8"}, {"169.254.0.0/16", "the link-local range 169.254.0.0/16"},
		{"224.0.0.0/8", "the multicast range 224.0.0.0/4"}, {"::1/128", "the loopback address ::1/128"},
		{"fe80::/64", "the link-local range fe80::/10"}, {"ff00::/8", "the multicast range ff00::/8"},
	} {
		rows = append(rows, badRow{name: "a service range over " + c.why, args: transformTo("--service-cidr", c.cidr), code: ExitUsage,
			want: "the new service CIDR " + c.cidr + " (--service-cidr) overlaps " + c.why + fix})
	}
	return append(rows,
		badRow{name: "a link-local pod range", args: cmdline("plan", "IN", "--pod-network-cidr", "169.254.0.0/16"), code: ExitUsage,
			want: "the new pod network CIDR 169.254.0.0/16 (--pod-network-cidr) overlaps the link-local range 169.254.0.0/16" + fix},
		badRow{name: "an IPv6 link-local pod range", args: restoreWith("--pod-network-cidr", "fe80::/56"), code: ExitUsage,
			want: "the new pod network CIDR fe80::/56 (--pod-network-cidr) overlaps the link-local range fe80::/10"},
		badRow{name: "a range over everything", args: cmdline("plan", "IN", "--service-cidr", "0.0.0.0/0"), code: ExitUsage,
			want: "(--service-cidr) overlaps the unspecified address 0.0.0.0/32"},
		badRow{name: "a multicast range for an added ServiceCIDR", args: cmdline("plan", "IN", "--service-cidr", newSvc, "--service-cidr-map", "10.100.0.0/16=224.1.0.0/16"),
			code: ExitUsage, want: "--service-cidr-map 10.100.0.0/16=224.1.0.0/16: the new range 224.1.0.0/16 overlaps the multicast range 224.0.0.0/4" + fix},
		rebuildRow("rebuild loopback service range", replace("serviceSubnet: 172.24.0.0/16", "serviceSubnet: 127.0.0.0/16"), ExitUsage,
			"the new service CIDR 127.0.0.0/16 (networking.serviceSubnet) overlaps the loopback range 127.0.0.0/8"),
		badRow{name: "certificates for a loopback service range", args: cmdline("certs", "--all", "--cert-dir", "WORK/pki", "--service-cidr", "127.0.0.0/16", "--node-name", "cp1",
			"--apiserver-advertise-address", "10.0.0.10"), code: ExitUsage, want: "--service-cidr: 127.0.0.0/16 overlaps the loopback range 127.0.0.0/8" + fix},
		badRow{name: "manifests for a multicast pod range", args: cmdline("manifests", "--generate", "--out-dir", "WORK/m", "--kubernetes-version", "v1.36.3",
			"--apiserver-advertise-address", "10.0.0.10", "--node-name", "cp1", "--service-cidr", newSvc, "--pod-network-cidr", "224.0.0.0/16"), code: ExitUsage,
			want: "--pod-network-cidr: 224.0.0.0/16 overlaps the multicast range 224.0.0.0/4"},
		badRow{name: "verify against a link-local range", args: cmdline("verify", "IN", "--service-cidr", "fe80::/108"), code: ExitUsage,
			want: "--service-cidr: fe80::/108 overlaps the link-local range fe80::/10"},
		badRow{name: "manifests for a Kubernetes older than supported", args: cmdline("manifests", "--generate", "--out-dir", "WORK/m", "--kubernetes-version", "v1.29.9",
			"--apiserver-advertise-address", "10.0.0.10", "--node-name", "cp1", "--service-cidr", newSvc), code: ExitUsage,
			want: `--kubernetes-version "v1.29.9" is older than v1.30, the oldest Kubernetes snapshift supports`},
		rebuildRow("rebuild kubernetesVersion older than supported", replace("v1.36.3", "v1.24.17"), ExitUsage,
			`manifests.kubernetesVersion "v1.24.17" is older than v1.30, the oldest Kubernetes snapshift supports`),
	)
}

// TestSameValueTwiceIsNoContradiction: a flag given twice with the same value (5m and 300s are one
// duration) says one thing, and runs.
func TestSameValueTwiceIsNoContradiction(t *testing.T) {
	in := copySample(t)
	if r := run(t, "plan", in, "--service-cidr", newSvc, "--quiet", "--service-cidr="+newSvc, "--quiet"); r.code != ExitOK {
		t.Errorf("plan with --service-cidr twice, the same: exit %d, %s", r.code, r.stderr)
	}
	if r := run(t, "cluster", "check", "--timeout", "5m", "--timeout", "300s"); r.code != ExitUsage || !strings.Contains(r.stderr, "give --bundle DIR") {
		t.Errorf("cluster check with --timeout 5m and 300s: exit %d, %q; want the next mistake, the missing --bundle", r.code, r.stderr)
	}
}

// ---------------------------------------------------------------------------------------------
// No Go identifiers in messages.

var (
	goNamesOnce sync.Once
	goNames     []string // exported type and field names of the option and config structs
)

// optionStructNames collects, from the module's non-test sources, the names of the struct types
// that hold options (named *Config, *Options, *Changes, or the rebuild and rules files' types)
// and of their exported fields: what a library names in an option.Error, never to be shown.
func optionStructNames(t *testing.T) []string {
	goNamesOnce.Do(func() {
		set := map[string]bool{}
		root := "../../.."
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			collectOptionNames(f, filepath.ToSlash(p), set)
			return nil
		})
		if err != nil {
			t.Fatalf("reading the module's sources: %v", err)
		}
		for n := range set {
			goNames = append(goNames, n)
		}
		sort.Strings(goNames)
	})
	return goNames
}

// fileTypes are the types of the configuration files (whatever their names).
var fileTypes = map[string]bool{"rebuild/config.go": true, "ruleset/file.go": true}

func collectOptionNames(f *ast.File, path string, set map[string]bool) {
	inFile := false
	for k := range fileTypes {
		inFile = inFile || strings.HasSuffix(path, k)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || !ts.Name.IsExported() {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		name := ts.Name.Name
		if !ok || !(inFile || strings.HasSuffix(name, "Config") || strings.HasSuffix(name, "Options") || strings.HasSuffix(name, "Changes")) {
			return true
		}
		set[name] = true
		for _, fld := range st.Fields.List {
			for _, id := range fld.Names {
				if id.IsExported() {
					set[id.Name] = true
				}
			}
		}
		return true
	})
}

// goIdentifierIn returns the first option field or type name in msg, or "". A name of two
// or more words (ServiceCIDR, RevisionBump, GenerateConfig) counts wherever it stands as a
// word; an acronym (PKI) never; a one-word name (Encryption, Force) only inside a sentence, after a lower-case word,
// where English would not capitalise it.
func goIdentifierIn(names []string, msg string) string {
	for _, n := range names {
		if strings.ToUpper(n) == n {
			continue // an acronym (PKI): a word of the trade, not a Go name
		}
		camel := regexp.MustCompile(`[a-z0-9][A-Z]|[A-Z][A-Z][a-z]`).MatchString(n)
		var re *regexp.Regexp
		if camel {
			re = regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(n) + `($|[^A-Za-z0-9_])`)
		} else {
			re = regexp.MustCompile(`[a-z,] ` + regexp.QuoteMeta(n) + `($|[^A-Za-z0-9_/.-])`)
		}
		if loc := re.FindStringIndex(msg); loc != nil {
			// Quoted text comes from the user or the snapshot, not from the code.
			if !insideQuotes(msg, loc[0]+strings.Index(msg[loc[0]:loc[1]], n)) {
				return n
			}
		}
	}
	return ""
}

// insideQuotes reports whether position i of s is inside a "double-quoted" string.
func insideQuotes(s string, i int) bool {
	return strings.Count(s[:i], `"`)%2 == 1
}

// TestGoIdentifierCheckBites: the check finds the leaks issue 24 lists, and the names it
// checks include the ones those leaks used.
func TestGoIdentifierCheckBites(t *testing.T) {
	names := optionStructNames(t)
	if len(names) < 100 {
		t.Fatalf("only %d option names collected: %v", len(names), names)
	}
	for _, leak := range []string{
		"snapshift: /registry/secrets/a/b is encrypted (aescbc key \"k\"): give the apiserver's EncryptionConfiguration with Encryption",
		"snapshift: CA \"/x/ca\": no such file (this operation reuses the CA in CertDir)",
		"snapshift: InitialCluster \"m9=http://127.0.0.1:2380\" does not name this member \"m1\"",
		"snapshift: RevisionBump and MarkCompacted go together: give both (the default) or neither",
		"snapshift: generating manifests: kubernetes version is required; see KubernetesVersion",
	} {
		if goIdentifierIn(names, leak) == "" {
			t.Errorf("no Go identifier found in %q", leak)
		}
	}
	if n := goIdentifierIn(names, `snapshift: --keep-service-ip "ServiceCIDR": want NAMESPACE/NAME`); n != "" {
		t.Errorf("a quoted user value counted as a Go identifier: %s", n)
	}
}

// TestDryRunClientSpelling: kubectl's --dry-run=client is the switch --dry-run (snapshift is
// always client-side), in any position; other values are a usage error saying it is a switch.
func TestDryRunClientSpelling(t *testing.T) {
	in := copySample(t)
	plain := run(t, "transform", in, "--dry-run", "--service-cidr", newSvc, "--quiet", "-o", "json")
	client := run(t, "transform", in, "--dry-run=client", "--service-cidr", newSvc, "--quiet", "-o", "json")
	same := withoutTiming(t, client.stdout) == withoutTiming(t, plain.stdout)
	if plain.code != ExitOK || client.code != ExitOK || !same || client.stdout == "" {
		t.Errorf("--dry-run=client: exit %d (stderr %q); --dry-run: exit %d; same report: %v", client.code, client.stderr, plain.code, same)
	}
	if r := run(t, "transform", in, "--service-cidr", newSvc, "--dry-run=false", "--quiet"); r.code != ExitUsage || !strings.Contains(r.stderr, "needs --out") {
		t.Errorf("--dry-run=false is a boolean as before: exit %d, %q", r.code, r.stderr)
	}
	if r := run(t, "transform", in, "--dry-run=none", "--quiet"); r.code != ExitUsage || !strings.Contains(r.stderr, "--dry-run is a plain switch") {
		t.Errorf("--dry-run=none: exit %d, %q", r.code, r.stderr)
	}
}

// TestCompletionAndHelp: the completion scripts and help for a command.
func TestCompletionAndHelp(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -F _snapshift_func snapshift", "zsh": "compdef _snapshift snapshift",
		"fish": "complete -c snapshift"} {
		if r := run(t, "completion", shell); r.code != ExitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, want a script with %q:\n%.300s", shell, r.code, want, r.stdout)
		}
	}
	if r := run(t, "completion", "tcsh"); r.code != ExitUsage || !strings.Contains(r.stderr, `"tcsh" is not bash, zsh or fish`) {
		t.Errorf("completion tcsh: exit %d, %q", r.code, r.stderr)
	}
	// (The candidates the scripts ask for: TestVersionOfABuiltBinary, since urfave/cli reads
	// them from os.Args.)
	if r := run(t, "help", "rebuild"); r.code != ExitOK || !strings.Contains(r.stdout, "snapshift rebuild") || !strings.Contains(r.stdout, "--config") {
		t.Errorf("help rebuild: exit %d:\n%s", r.code, r.stdout)
	}
}

// TestLongListCappedFullInJSON: a refusal that lists Services says ten of them and "… and N
// more" on its one line; with -o json the whole list is on stdout.
func TestLongListCappedFullInJSON(t *testing.T) {
	var extra []sample.Entry
	for i := 0; i < 25; i++ {
		ip := fmt.Sprintf("192.168.50.%d", 100+i)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%02d", i), Namespace: "demo", UID: types.UID(fmt.Sprintf("u-%d", i))},
			Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Type: corev1.ServiceTypeClusterIP}}
		raw, err := svc.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Service"}, Raw: raw}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, sample.Entry{Key: "/registry/services/specs/demo/" + svc.Name, Value: append([]byte("k8s\x00"), b...)})
	}
	in := writeFixture(t, filepath.Join(t.TempDir(), "in.db"), fixture{keys: sampleKVs(t, extra...)})
	text := run(t, "plan", in, "--service-cidr", "172.24.0.0/28", "--quiet")
	lines := text.stderrLines()
	if text.code != ExitRefused || len(lines) != 1 || !strings.Contains(lines[0], "keep 31 Services at their offsets") ||
		!strings.Contains(lines[0], ", … and 28 more); the smallest range at that address that keeps every one where it is: 172.24.0.0/16; choose a larger range or pass --repack") {
		t.Fatalf("plan: exit %d, stderr %q; want exit 4 and one line summing up 31 Services with three examples", text.code, text.stderr)
	}
	machine := run(t, "plan", in, "--service-cidr", "172.24.0.0/28", "--quiet", "-o", "json")
	var doc struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Error      string   `json:"message"`
		ExitCode   int      `json:"exitCode"`
		Details    []string `json:"details"`
	}
	if err := json.Unmarshal([]byte(machine.stdout), &doc); err != nil || machine.code != ExitRefused {
		t.Fatalf("plan -o json: exit %d, stdout %q: %v", machine.code, machine.stdout, err)
	}
	if doc.APIVersion != "snapshift.io/v1alpha1" || doc.Kind != "Error" || doc.ExitCode != ExitRefused {
		t.Errorf("plan -o json: the error document is %s %s with exit code %d", doc.APIVersion, doc.Kind, doc.ExitCode)
	}
	if len(doc.Details) != 31 || !strings.Contains(strings.Join(doc.Details, "\n"), "demo/s24 (192.168.50.124, offset") || doc.Error != strings.TrimPrefix(lines[0], "snapshift: ") {
		t.Errorf("plan -o json: %d details (want all 31), error %q", len(doc.Details), doc.Error)
	}
}

// withoutTiming is a JSON report without its wall-clock phase times (which
// differ from run to run), re-encoded for comparison.
func withoutTiming(t *testing.T, report string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(report), &m); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	delete(m, "timing")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRebuildNotesAnUntestedVersion: a kubernetesVersion past the newest
// release make e2e judges is taken, with one note saying so; the newest
// itself gets none.
func TestRebuildNotesAnUntestedVersion(t *testing.T) {
	for v, noted := range map[string]bool{"v1.36.3": false, "v1.40.0": true} {
		work := t.TempDir()
		args, prepare := rebuildFile("rebuild.yaml", replace("v1.36.3", v))
		prepare(t, work)
		r := run(t, args("", work)...)
		if r.code != ExitOK {
			t.Fatalf("rebuild with %s: exit %d: %s", v, r.code, r.stderr)
		}
		note := "[manifests] note: kubernetesVersion " + v + " is newer than " + manifests.NewestKubernetesVersion + ", the newest release snapshift's tests judge"
		if strings.Contains(r.stderr, note) != noted {
			t.Errorf("rebuild with %s: note shown %v, want %v:\n%s", v, !noted, noted, r.stderr)
		}
	}
}

package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 52 item 3: no Go, YAML-library or strconv wording in any error a user sees; every parse
// error says the form the value takes.

// libraryWording is what no error a user reads may hold: the decoders' and parsers' own words and
// Go's type names (run checks every error any test of this package provokes).
var libraryWording = regexp.MustCompile(`Go (value|struct field)|cannot unmarshal|converting YAML to JSON|unmarshaling JSON|decoding JSON|` +
	`strconv\.|invalid syntax|(^|: )(json|yaml|time): |netip\.|ParseAddr\(|ParsePrefix\(|invalid CIDR address|JSON input|` +
	`of type \S*[\[.]|cannot be decoded into|!!(str|int|bool|map|seq)|not found in type`)

// libraryWordingIn is the library wording in msg, or "".
func libraryWordingIn(msg string) string { return libraryWording.FindString(msg) }

// encryptionFileRow is a row for plan with an EncryptionConfiguration holding body.
func encryptionFileRow(name, body, want string) badRow {
	return badRow{name: name, code: ExitUsage, want: want,
		args: cmdline("plan", "IN", "--encryption-config", "WORK/enc.yaml"),
		prepare: func(t *testing.T, work string) {
			writeFile(t, filepath.Join(work, "enc.yaml"), "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"+body)
		}}
}

// editedManifests is kubeadmManifests with kube-apiserver.yaml edited.
func editedManifests(old, new string) func(t *testing.T, work string) {
	return func(t *testing.T, work string) {
		kubeadmManifests(t, work)
		p := filepath.Join(work, "m", "kube-apiserver.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("kube-apiserver.yaml has no %q", old)
		}
		writeFile(t, p, strings.Replace(string(b), old, new, 1))
	}
}

// reportBundle writes a bundle directory whose report.json is body.
func reportBundle(body string) func(t *testing.T, work string) {
	return func(t *testing.T, work string) {
		if err := os.Mkdir(filepath.Join(work, "bundle"), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, "bundle", "report.json"), body)
	}
}

// wordingRows are the files and values that reached the user in a decoder's words: each now
// names the key (with its line where the file has lines), the form it takes and what it got.
func wordingRows() []badRow {
	const member = "    clientURL: https://10.0.0.10:2379"
	manifests := cmdline("manifests", "--manifest-dir", "WORK/m", "--out-dir", "WORK/new", "--service-cidr", newSvc)
	return []badRow{
		// The rebuild file: what sigs.k8s.io/yaml said as "cannot unmarshal number into Go value of type string".
		rebuildRow("rebuild number for a networking string", replace("serviceSubnet: 172.24.0.0/16", "serviceSubnet: 12"), ExitUsage,
			`networking.serviceSubnet (line 6): takes a string, not the number 12 (quote it: "12")`),
		rebuildRow("rebuild switch for a networking string", replace("serviceSubnet: 172.24.0.0/16", "serviceSubnet: 172.24.0.0/16\n  dnsService: true"), ExitUsage,
			`networking.dnsService (line 7): takes a string, not true (quote it: "true")`),
		rebuildRow("rebuild negative revision bump", replace(member, member+"\n  revisionBump: -1"), ExitUsage,
			"etcd.revisionBump (line 12): takes a whole number, 0 or more, not the number -1"),
		rebuildRow("rebuild file indented with a tab", replace("networking:\n  serviceSubnet", "networking:\n\tserviceSubnet"), ExitUsage,
			"line 6: not valid YAML: found character that cannot start any token (a tab where YAML wants spaces, or a value starting with @ or ` that needs quotes)"),
		rebuildRow("rebuild file with an unclosed list", replace("manifests:\n", "pki:\n  certSANs: [a\nmanifests:\n"), ExitUsage,
			"not valid YAML: did not find expected ',' or ']'"),
		// The rules file.
		rulesFileRow("rules file that is not YAML", "rules: [\n", "rules.yaml: line 1: not valid YAML: did not find expected node content"),
		// The EncryptionConfiguration: "a string cannot be decoded into a []string", "[]encryption.resourceConfiguration".
		encryptionFileRow("encryption config resources as a string", "resources:\n- resources: secrets\n  providers: [{identity: {}}]\n",
			`resources[0].resources (line 4): takes a list, not "secrets"`),
		encryptionFileRow("encryption config resources as a number", "resources: 5\n", "resources (line 3): takes a list, not the number 5"),
		encryptionFileRow("encryption config key name as a number", "resources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: 1, secret: c2VjcmV0}]}}]\n",
			`resources[0].providers[0].aescbc.keys[0].name (line 5): takes a string, not the number 1`),
		encryptionFileRow("encryption config indented with a tab", "resources:\n\t- x\n", "line 4: not valid YAML:"),
		// Static Pod manifests: "cannot unmarshal number into Go struct field PodSpec.spec.containers of type []v1.Container", exit 1.
		{name: "a manifest whose containers are a number", code: ExitUsage, args: manifests, prepare: editedManifests("  containers:\n", "  containers: 5\n  x:\n"),
			want: "--manifest-dir: WORK/m/kube-apiserver.yaml: not a valid Pod manifest: spec.containers: takes a list, not a number"},
		{name: "a manifest with a word for a switch", code: ExitUsage, args: manifests, prepare: editedManifests("    name: kube-apiserver\n", "    name: kube-apiserver\n    stdin: maybe\n"),
			want: "kube-apiserver.yaml: not a valid Pod manifest: spec.containers.stdin: takes true or false, not a string"},
		{name: "a manifest that is not YAML", code: ExitUsage, args: manifests, prepare: editedManifests("kind: Pod\n", "kind: Pod\n\tbad: [\n"),
			want: "kube-apiserver.yaml: line 2: not valid YAML: found a tab character that violates indentation (YAML indents with spaces, never tabs)"},
		// A bundle's report.json: "cannot unmarshal number into Go struct field .nodes of type []struct { Name string ... }".
		{name: "a report.json whose nodes are a number", code: ExitUsage, args: cmdline("node", "apply", "--bundle", "WORK/bundle", "--node", "cp1", "--root", "WORK"),
			prepare: reportBundle(`{"nodes": 5}`), want: "report.json is not a rebuild report: nodes: takes a list, not a number"},
		{name: "a report.json cut short", code: ExitUsage, args: cmdline("node", "apply", "--bundle", "WORK/bundle", "--node", "cp1", "--root", "WORK"),
			prepare: reportBundle(`{"nodes": [`), want: "report.json is not a rebuild report: the JSON ends too early (is the file cut short?)"},
	}
}

// TestLibraryWordingCheckBites: the check run makes on every error catches what the decoders say.
func TestLibraryWordingCheckBites(t *testing.T) {
	for _, msg := range []string{
		"rebuild configuration c.yaml: error unmarshaling JSON: while decoding JSON: networking.serviceSubnet: json: cannot unmarshal number into Go value of type string",
		`m/kube-apiserver.yaml: not a valid Pod manifest: json: cannot unmarshal string into Go struct field Container.spec.containers.stdin of type bool`,
		`--x: strconv.ParseBool: parsing "yes": invalid syntax`,
		`x: time: invalid duration "soon"`,
		"r.yaml: yaml: line 7: did not find expected node content",
		"resources: a number cannot be decoded into a []encryption.resourceConfiguration",
		"report.json: unexpected end of JSON input",
	} {
		if libraryWordingIn(msg) == "" {
			t.Errorf("not caught: %q", msg)
		}
	}
	if w := libraryWordingIn(`rebuild configuration c.yaml: etcd.revisionBump (line 12): takes a whole number, 0 or more, not the number -1`); w != "" {
		t.Errorf("a good message caught for %q", w)
	}
}

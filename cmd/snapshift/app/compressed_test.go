package app

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapshift/snapshift/snapshot"
)

// k3sZip compresses data as k3s's compressSnapshot does (k3s-io/k3s
// pkg/etcd/snapshot.go): a zip.FileInfoHeader of the plain file, renamed to
// the snapshot's bare name, Deflate, Modified = the snapshot's time. Extra
// entries follow when given (for the refusal of a two-entry archive).
func k3sZip(t *testing.T, name string, data []byte, extra ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, n := range append([]string{name}, extra...) {
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: time.Unix(1764000000, 0)}
		h.SetMode(0o600)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			_, err = w.Write(data)
		} else {
			_, err = w.Write([]byte("second"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zippedSample is the sample snapshot compressed as k3s names and
// compresses its snapshots (etcd-snapshot-<node>-<unix>.zip).
func zippedSample(edit func(t *testing.T, z []byte) []byte, extra ...string) func(t *testing.T, dir string) string {
	const name = "etcd-snapshot-server-1-1764000000"
	return fileWith(name+".zip", func(t *testing.T) []byte {
		z := k3sZip(t, name, sampleBytes(t), extra...)
		if edit != nil {
			z = edit(t, z)
		}
		return z
	})
}

// zipRows are the bad-input rows for compressed snapshots.
func zipRows() []badRow {
	return []badRow{
		{name: "zip truncated in the middle", args: inspectOf, code: ExitBadInput, want: "not a valid one",
			input: zippedSample(func(_ *testing.T, z []byte) []byte { return z[:len(z)/2] })},
		{name: "zip with a damaged Deflate stream", args: transformTo("--service-cidr", "172.24.0.0/16"), code: ExitBadInput, want: "is damaged",
			input: zippedSample(func(_ *testing.T, z []byte) []byte {
				z = bytes.Clone(z)
				for i := 200; i < 400; i++ { // inside the entry's data, after its local header
					z[i] ^= 0x5a
				}
				return z
			})},
		{name: "zip with two entries", args: transformTo(), code: ExitBadInput, want: "holding 2 entries",
			input: zippedSample(nil, "etcd-snapshot-server-1-1764000001")},
		{name: "a k3s snapshot given to certs", code: ExitRefused, want: "is a k3s snapshot, and certs writes kubeadm-layout certificates",
			args: func(in, work string) []string {
				return []string{"certs", in, "--all", "--cert-dir", filepath.Join(work, "pki")}
			},
			input: func(t *testing.T, dir string) string {
				zipped, _ := k3sCorpus(t, "k3s")
				p := filepath.Join(dir, filepath.Base(zipped))
				b, err := os.ReadFile(zipped)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}},
		{name: "an RKE2 snapshot given to manifests", code: ExitRefused, want: "is a rke2 snapshot, and manifests writes kubeadm static-pod manifests",
			args: func(in, work string) []string { return []string{"manifests", in, "--manifest-dir", work} },
			input: func(t *testing.T, dir string) string {
				zipped, _ := k3sCorpus(t, "rke2")
				p := filepath.Join(dir, "rke2-snapshot")
				u, err := snapshot.Unzip(zipped, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(u.Path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}},
		{name: "zip with no entry", args: inspectOf, code: ExitBadInput, want: "holding 0 entries",
			input: fileWith("empty.zip", func(t *testing.T) []byte {
				var buf bytes.Buffer
				zw := zip.NewWriter(&buf)
				zw.SetComment("nothing") // an empty archive starts with the end record: give it a local header
				if err := zw.Close(); err != nil {
					t.Fatal(err)
				}
				return append([]byte("PK\x03\x04"), buf.Bytes()...)
			})},
	}
}

// TestCompressedSnapshot runs inspect, plan, transform and verify on the sample compressed as k3s
// compresses it: read by content (the name has no .db), extracted into --tmp-dir and removed, the
// output compressed as the input was, with the .metadata sidecar copied beside it.
func TestCompressedSnapshot(t *testing.T) {
	root := t.TempDir()
	snaps, tmp := filepath.Join(root, "server", "db", "snapshots"), filepath.Join(root, "tmp")
	for _, d := range []string{snaps, tmp, filepath.Join(root, "server", "db", ".metadata")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	in := zippedSample(nil)(t, snaps)
	side := []byte(`{"cluster":"prod"}`)
	if err := os.WriteFile(snapshot.MetadataPath(in), side, 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, root)

	r := run(t, "inspect", in, "--tmp-dir", tmp, "--quiet")
	if r.code != 0 || !strings.Contains(r.stdout, `one entry "etcd-snapshot-server-1-1764000000"`) || !strings.Contains(r.stdout, in+"\n") {
		t.Fatalf("inspect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(snaps, "etcd-snapshot-server-1-1764000000-migrated.zip")
	r = run(t, "transform", in, "--out", out, "--tmp-dir", tmp, "--quiet", "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16")
	if r.code != 0 {
		t.Fatalf("transform: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `one Deflate entry "etcd-snapshot-server-1-1764000000-migrated"`) {
		t.Errorf("transform does not say it compressed the output:\n%s", r.stdout)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 1 || zr.File[0].Name != "etcd-snapshot-server-1-1764000000-migrated" || zr.File[0].Method != zip.Deflate {
		t.Errorf("output zip: %d entries, first %q method %d; want one Deflate entry named after the output", len(zr.File), zr.File[0].Name, zr.File[0].Method)
	}
	zr.Close()
	if got, err := os.ReadFile(snapshot.MetadataPath(out)); err != nil || !bytes.Equal(got, side) {
		t.Errorf("metadata sidecar beside the output: %q, %v; want the input's %q", got, err, side)
	}
	r = run(t, "verify", out, "--tmp-dir", tmp, "--quiet", "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16")
	if r.code != 0 {
		t.Fatalf("verify of the compressed output: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Nothing left in --tmp-dir; the input and its sidecar unchanged.
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("--tmp-dir holds %d entries after the runs, want none", len(ents))
	}
	after := dirState(t, root)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed", k)
		}
	}

	// --compress=false writes a plain snapshot from a compressed input.
	plain := filepath.Join(root, "plain")
	r = run(t, "transform", in, "--out", plain, "--tmp-dir", tmp, "--quiet", "--compress=false")
	if z, _ := snapshot.IsZip(plain); r.code != 0 || z {
		t.Errorf("--compress=false: exit %d, zip %v\n%s", r.code, z, r.stderr)
	}
}

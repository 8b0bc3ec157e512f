package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/snapshot"
)

// compressedInput is what a command knows about a compressed (zipped) k3s
// or RKE2 snapshot argument: where it was extracted to, and the original.
type compressedInput struct {
	tmpDir   string             // --tmp-dir
	original string             // the argument as given
	unzipped *snapshot.Unzipped // nil for a plain snapshot
}

func (o *common) tmpDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "tmp-dir", Destination: &o.in.tmpDir,
		Usage: "where a compressed (zip) k3s/RKE2 snapshot is extracted while snapshift runs, in a snapshift-unzip-* directory removed on exit; needs the snapshot's uncompressed size free (default: $TMPDIR or /tmp)"}
}

// unpack extracts *path into --tmp-dir when it is a zip archive (k3s's
// --etcd-snapshot-compress) and points *path at the extracted file. The
// input and its directory are only read. cleanup removes the extraction.
func (o *common) unpack(path *string) error {
	o.in.original = *path
	if err := checkTmpDir(o.in.tmpDir); err != nil {
		return err
	}
	zipped, err := snapshot.IsZip(*path)
	if err != nil || !zipped {
		return err
	}
	p := o.progress()
	p.Start("unzip", "bytes", 0)
	u, err := snapshot.Unzip(*path, o.in.tmpDir)
	if err != nil {
		p.Done()
		return err
	}
	if st, err := os.Stat(u.Path); err == nil {
		p.Add(st.Size())
	}
	p.Done()
	o.in.unzipped = u
	*path = u.Path
	return nil
}

// checkTmpDir refuses a --tmp-dir that is no directory (exit 2), whether
// or not the snapshot needs it: a mistake in the command line.
func checkTmpDir(dir string) error {
	if dir == "" {
		return nil
	}
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("--tmp-dir %s does not exist: create it, or leave the flag out (default: $TMPDIR, else /tmp)", dir)
	case err != nil:
		return usagef("--tmp-dir: %w", err)
	case !st.IsDir():
		return usagef("--tmp-dir %s is not a directory", dir)
	}
	return nil
}

// cleanup removes what unpack extracted. Every action calls it on return.
func (o *common) cleanup() {
	if o.in.unzipped != nil {
		o.in.unzipped.Remove()
		o.in.unzipped = nil
	}
}

// compressedOutput is transform's --compress: a zipped output is written
// plain into a temporary directory first (where transform checks it), then
// compressed to --out as k3s compresses a snapshot.
type compressedOutput struct {
	compress    bool
	compressSet bool
	plainDir    string
}

func (o *transformOptions) compressFlag() cli.Flag {
	return &cli.BoolFlag{Name: "compress", Destination: &o.zip.compress,
		Usage: "write --out as a compressed k3s/RKE2 snapshot (a zip holding one Deflate entry named after --out without .zip); default: compressed when the input is, with its .metadata sidecar copied beside it"}
}

// wantZip says whether transform's output is to be compressed.
func (o *transformOptions) wantZip() bool {
	if o.zip.compressSet {
		return o.zip.compress
	}
	return o.in.unzipped != nil
}

// plainOutput returns where transform writes the uncompressed snapshot
// that finishZip will compress to --out.
func (o *transformOptions) plainOutput() (string, error) {
	if o.out == o.in.original {
		return "", refusedf("output %s is the input: write the new snapshot to another file", o.out)
	}
	if err := fsutil.CheckNew(o.out, o.force); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(o.in.tmpDir, "snapshift-zip-*")
	if err != nil {
		return "", fmt.Errorf("a temporary directory for the uncompressed output: %w", err)
	}
	o.zip.plainDir = dir
	return filepath.Join(dir, "snapshot.db"), nil
}

// finishZip compresses the checked plain output to --out and copies the
// input's .metadata sidecar, if any, beside it. It returns the sidecar
// written ("" when none).
func (o *transformOptions) finishZip(plain string) (string, error) {
	zo := snapshot.ZipOptions{Force: o.force}
	if u := o.in.unzipped; u != nil {
		// The input entry's time, not the clock: two runs write the same archive.
		zo.Mode, zo.Modified = u.Mode, u.Modified
	}
	if err := snapshot.Zip(plain, o.out, zo); err != nil {
		return "", fmt.Errorf("compressing the new snapshot to %s: %w", o.out, err)
	}
	return o.copySidecar()
}

// copySidecar copies the input's k3s metadata sidecar (../.metadata/<file>)
// to the output's, as k3s would find it beside the output.
func (o *transformOptions) copySidecar() (string, error) {
	b, err := os.ReadFile(snapshot.MetadataPath(o.in.original))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	side := snapshot.MetadataPath(o.out)
	if err := os.MkdirAll(filepath.Dir(side), 0o700); err != nil {
		return "", err
	}
	return side, fsutil.WriteFile(side, b, 0o600, o.force)
}

// removePlain removes the uncompressed output's temporary directory.
func (o *transformOptions) removePlain() {
	if o.zip.plainDir != "" {
		os.RemoveAll(o.zip.plainDir)
		o.zip.plainDir = ""
	}
}

// printCompressed says how a compressed output was written.
func printCompressed(out io.Writer, res *migrate.Result) {
	if res.Compressed == "" {
		return
	}
	fmt.Fprintf(out, "        compressed as k3s does (--etcd-snapshot-compress): one Deflate entry %q; the sha256 is the snapshot's inside\n",
		strings.TrimSuffix(filepath.Base(res.Compressed), snapshot.CompressedExtension))
	if res.Sidecar != "" {
		fmt.Fprintf(out, "        k3s metadata sidecar copied to %s\n", res.Sidecar)
	}
}

// Command snapgen generates the snapshot files snapshift's tests and demo use, with a real etcd
// running in-process on 127.0.0.1.
//
//	go run ./cmd/snapgen sample --out testdata/sample.db
//
// writes the sample kubeadm cluster (internal/sample) with its history and saves the snapshot exactly
// as `etcdctl snapshot save` does (bbolt file + sha256 trailer). The file is written under a temporary
// name in the target directory and renamed, so a reader never sees a partial file; an existing file is
// replaced.
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
)

const usage = `usage: snapgen sample --out FILE

Commands:
  sample   write the sample kubeadm cluster (internal/sample) into a new embedded etcd and save its snapshot
`

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "snapgen:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("invalid usage")

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "sample":
		fs := flag.NewFlagSet("sample", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		out := fs.String("out", "", "snapshot file to write (required)")
		timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
		if err := fs.Parse(args[1:]); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if *out == "" || fs.NArg() != 0 {
			return fmt.Errorf("%w: sample needs --out FILE and no arguments", errUsage)
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		return generateSample(ctx, *out, stdout)
	case "-h", "--help", "help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

// generateSample writes the sample into a fresh etcd in a temporary dir and saves its snapshot to out.
func generateSample(ctx context.Context, out string, stdout io.Writer) (err error) {
	dir := filepath.Dir(out)
	if fi, statErr := os.Stat(dir); statErr != nil || !fi.IsDir() {
		return fmt.Errorf("output directory %s does not exist", dir)
	}
	srv, err := etcdtest.Start(ctx, etcdtest.Config{Name: "snapgen"})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := srv.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	res, err := sample.Write(ctx, srv)
	if err != nil {
		return err
	}
	kvs, err := srv.LiveKVs(ctx)
	if err != nil {
		return err
	}

	// SaveSnapshot itself writes <tmp>.part and renames it to <tmp>; the final rename to out is the
	// atomic step a reader of out can observe.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return err
	}
	tmpPath := tmp.Name()
	if err := tmp.Close(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmpPath) // best effort; the error being returned is the one that matters
		}
	}()
	if err := srv.SaveSnapshot(ctx, tmpPath); err != nil {
		return err
	}
	sum, size, err := verifyTrailer(tmpPath)
	if err != nil {
		return err
	}
	// etcdctl leaves snapshots owner-only; this one is a fixture meant to be committed and read.
	if err := os.Chmod(tmpPath, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmpPath, out); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "snapgen: wrote %s: %d bytes, %d live keys, revision %d, compacted at %d, %d puts, %d deletes, sha256 trailer %x\n",
		out, size, len(kvs), res.Revision, res.CompactedAt, res.Puts, res.Deletes, sum[:8])
	return err
}

// verifyTrailer checks that the file ends with the sha256 of the rest, as etcdutl restore will.
func verifyTrailer(path string) (sum []byte, size int64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	if len(b)%512 != sha256.Size {
		return nil, 0, fmt.Errorf("%s: size %d has no sha256 trailer", path, len(b))
	}
	db, trailer := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	h := sha256.Sum256(db)
	if string(h[:]) != string(trailer) {
		return nil, 0, fmt.Errorf("%s: sha256 trailer does not match the data", path)
	}
	return trailer, int64(len(b)), nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close() // the sync error is the one to report
		return err
	}
	return d.Close()
}

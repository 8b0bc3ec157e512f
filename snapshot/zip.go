package snapshot

// Compressed snapshots as k3s and RKE2 write them with
// --etcd-snapshot-compress (k3s-io/k3s pkg/etcd/snapshot.go,
// compressSnapshot): a zip archive holding ONE entry, the plain snapshot
// (sha256 trailer and all), stored with Deflate under the snapshot's bare
// name (the zip's name without ".zip"), its header made from the plain
// file's FileInfo (mode kept) and Modified set to the snapshot's time. k3s's
// restore (decompressSnapshot) extracts the entries and restores the last
// one, so an archive with two entries is ambiguous: refused here.

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// CompressedExtension is the name suffix k3s gives a compressed snapshot.
const CompressedExtension = ".zip"

// zipMagic is the signature of a zip's first local file header.
var zipMagic = []byte("PK\x03\x04")

// IsZip reports whether the file at path is a zip archive, by its first
// bytes (not its name: k3s's plain snapshots have no extension at all).
func IsZip(path string) (bool, error) {
	f, err := openInput(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [4]byte
	n, err := io.ReadFull(f, b[:])
	if errors.Is(err, syscall.EISDIR) {
		return false, nil // Open says what is wrong with a directory
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return bytes.Equal(b[:n], zipMagic), nil
}

// Unzipped is a compressed snapshot extracted to a temporary file.
type Unzipped struct {
	// Path is the extracted plain snapshot, in a directory of its own that
	// Remove deletes.
	Path string
	// Entry is the entry's name in the archive (k3s: the snapshot's bare
	// name); Mode and Modified its header's, for writing the output alike.
	Entry    string
	Mode     fs.FileMode
	Modified time.Time
	dir      string
}

// Remove deletes the extracted file and its directory.
func (u *Unzipped) Remove() error {
	if u == nil || u.dir == "" {
		return nil
	}
	return os.RemoveAll(u.dir)
}

// Unzip extracts the one entry of the zip archive at path into a new
// directory under tmpDir (os.TempDir() when empty), checking the entry's
// CRC-32 as it goes. An archive that is not a valid zip, holds no entry or
// more than one, or whose entry does not inflate to its recorded CRC is an
// InputError. The input is only read.
func Unzip(path, tmpDir string) (*Unzipped, error) {
	r, err := zip.OpenReader(path)
	if err != nil {
		return nil, &InputError{Path: path, Problem: "starts like a zip archive but is not a valid one (a truncated or damaged compressed snapshot)", Err: err}
	}
	defer r.Close()
	if n := len(r.File); n != 1 {
		names := make([]string, 0, n)
		for _, f := range r.File {
			names = append(names, f.Name)
		}
		return nil, invalid(path, "is a zip archive holding %d entries %q; a compressed k3s/RKE2 snapshot holds exactly one", n, names)
	}
	zf := r.File[0]
	if zf.FileInfo().IsDir() || zf.Method != zip.Deflate && zf.Method != zip.Store {
		return nil, invalid(path, "is a zip archive whose entry %q is not a Deflate-compressed file", zf.Name)
	}
	dir, err := os.MkdirTemp(tmpDir, "snapshift-unzip-*")
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: a directory to extract it into: %w", path, err)
	}
	u := &Unzipped{Entry: zf.Name, Mode: zf.Mode().Perm(), Modified: zf.Modified, dir: dir}
	name := filepath.Base(zf.Name)
	if name == "." || name == "/" || name == "" {
		name = "snapshot"
	}
	u.Path = filepath.Join(dir, name)
	if err := extract(zf, u.Path); err != nil {
		u.Remove()
		var ie *InputError
		if errors.As(err, &ie) {
			ie.Path = path
			return nil, ie
		}
		return nil, fmt.Errorf("snapshot %s: extracting %q into %s: %w", path, zf.Name, dir, err)
	}
	return u, nil
}

func extract(zf *zip.File, to string) error {
	rc, err := zf.Open()
	if err != nil {
		return &InputError{Problem: fmt.Sprintf("zip entry %q cannot be read", zf.Name), Err: err}
	}
	defer rc.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		if errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) || isFlateError(err) {
			return &InputError{Problem: fmt.Sprintf("zip entry %q is damaged", zf.Name), Err: err}
		}
		return err
	}
	return out.Close()
}

// isFlateError tells a corrupt Deflate stream (compress/flate's
// CorruptInputError, io.ErrUnexpectedEOF) from an I/O failure.
func isFlateError(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "flate: corrupt input")
}

// ZipEpoch is the entry time of an archive whose caller gives none: the
// first time a zip header can hold (1980-01-01, MS-DOS's epoch), as
// reproducible builds stamp archives.
var ZipEpoch = time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC)

// ZipOptions configure Zip.
type ZipOptions struct {
	// Entry is the entry's name; default: dst's base name without ".zip",
	// as k3s names it.
	Entry string
	// Mode and Modified go into the entry's header; defaults 0600 (k3s's
	// snapshot files) and ZipEpoch (no clock: the same input and options
	// give the same archive, byte for byte).
	Mode     fs.FileMode
	Modified time.Time
	// Force replaces an existing dst.
	Force bool
}

// Zip writes src as the one Deflate entry of a new zip archive at dst, as
// k3s compresses a snapshot: written under a temporary name beside dst,
// fsynced, then renamed into place (an existing dst only with Force).
func Zip(src, dst string, opts ZipOptions) (err error) {
	if err := fsutil.CheckNew(dst, opts.Force); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	h, err := zip.FileInfoHeader(st)
	if err != nil {
		return err
	}
	h.Name, h.Method, h.Modified = opts.Entry, zip.Deflate, opts.Modified
	if h.Name == "" {
		h.Name = strings.TrimSuffix(filepath.Base(dst), CompressedExtension)
	}
	if h.Modified.IsZero() {
		h.Modified = ZipEpoch
	}
	mode := opts.Mode
	if mode == 0 {
		mode = 0o600
	}
	h.SetMode(mode)
	tmp, err := fsutil.CreateTemp(dst, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := zip.NewWriter(tmp)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return fsutil.Publish(tmp.Name(), dst, opts.Force)
}

// MetadataPath is where k3s keeps the extra-metadata sidecar of the
// snapshot file at path: ../.metadata/<file name> (pkg/etcd/snapshot.go,
// saveSnapshotMetadata: the JSON of the k3s-etcd-snapshot-extra-metadata
// ConfigMap's data).
func MetadataPath(path string) string {
	return filepath.Join(filepath.Dir(path), "..", ".metadata", filepath.Base(path))
}

package pki

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// File permissions, as kubeadm's (keyutil.WriteKey, certutil.WriteCert),
// with new directories private.
const (
	KeyPerm  os.FileMode = 0o600
	CertPerm os.FileMode = 0o644
	DirPerm  os.FileMode = 0o700
)

// output is one file to write, computed before anything is written.
type output struct {
	rel  string // path relative to the target directory
	data []byte
	perm os.FileMode
	info File // Kind, Name, Cert, Server
}

// certOutputs are the key and certificate files of spec (key first, as
// kubeadm writes them).
func certOutputs(spec CertSpec, cert *x509.Certificate, key crypto.Signer) ([]output, error) {
	keyPEM, err := encodeKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	return []output{
		{rel: spec.BaseName + ".key", data: keyPEM, perm: KeyPerm, info: File{Kind: KindPrivateKey, Name: spec.Name}},
		{rel: spec.BaseName + ".crt", data: EncodeCertPEM(cert), perm: CertPerm, info: File{Kind: KindCertificate, Name: spec.Name, Cert: DescribeCert(cert)}},
	}, nil
}

// preflight fails, before anything is written, when a target exists and is
// not a regular file.
func preflight(dir string, outs []output) error {
	for _, o := range outs {
		path := filepath.Join(dir, o.rel)
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", path)
		}
	}
	return nil
}

// commit writes outs under dir as one staged set (fsutil.WriteSet): every
// file complete under a temporary name first, each existing file kept as
// a backup, then the renames back to back in order (a key and its
// certificate are never left a run apart). It records every file in res;
// on error res lists what was renamed into place before it. With noBackup
// the backups are removed once the new files are in place.
func commit(dir string, outs []output, res *Result, noBackup bool) error {
	if err := preflight(dir, outs); err != nil {
		return err
	}
	set := make([]fsutil.SetFile, len(outs))
	for i, o := range outs {
		set[i] = fsutil.SetFile{Path: filepath.Join(dir, o.rel), Data: o.data, Perm: o.perm}
		if err := mkdirs(filepath.Dir(set[i].Path)); err != nil {
			return err
		}
	}
	n, err := fsutil.WriteSet(set)
	if noBackup {
		for i := range set[:n] {
			if set[i].Backup == "" {
				continue
			}
			if rerr := os.Remove(set[i].Backup); rerr != nil && err == nil {
				err = rerr
			}
			set[i].Backup = ""
		}
	}
	for i, o := range outs[:n] {
		f := o.info
		f.Path, f.Backup, f.Mode = set[i].Path, set[i].Backup, fmt.Sprintf("%04o", o.perm)
		res.Files = append(res.Files, f)
	}
	return err
}

// mkdirs creates dir and missing parents with DirPerm; existing
// directories keep their mode.
func mkdirs(dir string) error {
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return fmt.Errorf("creating directory %s: %w", dir, err)
	}
	return nil
}

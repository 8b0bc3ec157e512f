// Command mkimage writes an OCI image archive (an OCI layout as a tar: oci-layout,
// index.json, blobs/) holding one image of one layer built from local files,
// named for `ctr images import` by the index annotation io.containerd.image.name:
//
//	mkimage -o pause.tar -name registry.k8s.io/pause:3.10 \
//	    -file /pause=/path/to/pause -entrypoint /pause
//
// -file DEST=SRC is repeatable (mode 0755); -link DEST=TARGET (a symbolic
// link, as a multi-call binary's names) and -dir DEST (an empty directory)
// are repeatable; -env K=V is repeatable; -entrypoint and -cmd (the image's
// default arguments, as a Dockerfile's CMD) are space-separated. The archive is written to a temporary
// name and renamed, so an interrupted run leaves no partial archive.
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	out := fl.String("o", "", "the archive to write")
	name := fl.String("name", "", "the image name, e.g. registry.k8s.io/pause:3.10")
	entry := fl.String("entrypoint", "", "the entrypoint, space-separated")
	cmd := fl.String("cmd", "", "the default arguments, space-separated")
	var files, links, dirs, env multi
	fl.Var(&files, "file", "DEST=SRC, a file of the layer (repeatable)")
	fl.Var(&links, "link", "DEST=TARGET, a symbolic link of the layer (repeatable)")
	fl.Var(&dirs, "dir", "DEST, an empty directory of the layer (repeatable)")
	fl.Var(&env, "env", "K=V (repeatable)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *out == "" || *name == "" || len(files) == 0 {
		return errors.New("-o, -name and at least one -file are required")
	}
	tmp, err := os.MkdirTemp(filepath.Dir(*out), ".mkimage-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	layerPath := filepath.Join(tmp, "layer.tar.gz")
	if err := writeLayer(layerPath, files, links, dirs); err != nil {
		return err
	}
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	cfg := &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Config: v1.Config{
			Env:        append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/"}, env...),
			Entrypoint: strings.Fields(*entry),
			Cmd:        strings.Fields(*cmd),
		},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer})
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	dir := filepath.Join(tmp, "oci")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	tag := (*name)[strings.LastIndex(*name, ":")+1:]
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          *name,
		"org.opencontainers.image.ref.name": tag,
	})); err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	part := filepath.Join(tmp, "image.tar")
	if err := tarDir(part, dir); err != nil {
		return err
	}
	if err := os.Rename(part, *out); err != nil {
		return fmt.Errorf("publish %s: %w", *out, err)
	}
	return nil
}

// writeLayer writes a gzipped tar of the files and links, with their parent
// directories, the empty directories and an empty /tmp, owned by root.
func writeLayer(dst string, files, links, empty []string) error {
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	defer f.Close()
	zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{"tmp": true, "etc": true}
	for _, d := range empty {
		dirs[strings.Trim(d, "/")] = true
	}
	for _, spec := range append(append([]string(nil), files...), links...) {
		dest, _, ok := strings.Cut(spec, "=")
		if !ok {
			return fmt.Errorf("-file or -link %q: want DEST=SRC", spec)
		}
		for d := path.Dir(strings.TrimPrefix(dest, "/")); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		for p := path.Dir(d); p != "." && p != "/"; p = path.Dir(p) {
			dirs[p] = true
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode}); err != nil {
			return fmt.Errorf("layer: %w", err)
		}
	}
	for _, spec := range files {
		dest, src, _ := strings.Cut(spec, "=")
		if err := addFile(tw, strings.TrimPrefix(dest, "/"), src, 0o755); err != nil {
			return err
		}
	}
	for _, spec := range links {
		dest, target, _ := strings.Cut(spec, "=")
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(dest, "/"), Linkname: target, Mode: 0o777}); err != nil {
			return fmt.Errorf("layer %s: %w", dest, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	return f.Close()
}

func addFile(tw *tar.Writer, name, src string, mode int64) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: st.Size()}); err != nil {
		return fmt.Errorf("layer %s: %w", name, err)
	}
	if _, err := io.Copy(tw, in); err != nil {
		return fmt.Errorf("layer %s: %w", name, err)
	}
	return nil
}

// tarDir writes the OCI layout directory as an uncompressed tar.
func tarDir(dst, dir string) error {
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755})
		}
		return addFile(tw, rel, p, 0o644)
	})
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return f.Close()
}

package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/parseerr"
)

// The control-plane components, named as kubeadm names their containers,
// Pods and manifest files (<component>.yaml).
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Etcd                  = "etcd"
)

// ManifestPerm is the mode of a written manifest, as kubeadm's.
const ManifestPerm os.FileMode = 0o600

// Components lists the components in kubeadm's order.
func Components() []string {
	return []string{KubeAPIServer, KubeControllerManager, KubeScheduler, Etcd}
}

// FileName is the manifest file name of component: "<component>.yaml".
func FileName(component string) string { return component + ".yaml" }

// ErrUnknownComponent is wrapped when a name is not one of [Components].
var ErrUnknownComponent = errors.New("unknown control-plane component")

// ErrMissing is wrapped when a manifest a step needs is not in the set.
var ErrMissing = errors.New("manifest not found")

// ErrNoManifests is returned by Read for a directory with none of the
// manifests.
var ErrNoManifests = errors.New("no kubeadm static Pod manifest")

// ErrInvalidManifest is wrapped by Read for a file that is not a static Pod
// manifest it can read (not YAML, a value of the wrong kind, another kind
// of object): the user's file, not a refusal.
var ErrInvalidManifest = errors.New("not a readable static Pod manifest")

// invalidManifest is an error that Is ErrInvalidManifest, with its own message.
type invalidManifest struct{ error }

func (e invalidManifest) Is(target error) bool { return target == ErrInvalidManifest }
func (e invalidManifest) Unwrap() error        { return e.error }

func checkComponent(component string) error {
	if slices.Contains(Components(), component) {
		return nil
	}
	return fmt.Errorf("%w %q (valid: %s)", ErrUnknownComponent, component, strings.Join(Components(), ", "))
}

// Manifest is one static Pod.
type Manifest struct {
	// Component is the control-plane component (KubeAPIServer, ...).
	Component string
	// Path is the file it was read from; empty when generated.
	Path string
	// Pod is the static Pod. Update returns sets with changed copies; a
	// caller may change it too, and Render writes what it holds.
	Pod *corev1.Pod
	// Original is the file's bytes as read; nil when generated.
	Original []byte
	// Warnings are problems that did not stop Read (fields this k8s.io/api
	// does not know: the text is still edited in place, but such a manifest
	// is never re-marshalled, which would drop them).
	Warnings []string

	// orig is Original decoded; the base of the in-place edit.
	orig *corev1.Pod
	// lossy is set when Original has fields the typed Pod drops.
	lossy bool
}

// Container returns the component's container: the one named after the
// component, else the Pod's only container.
func (m *Manifest) Container() (*corev1.Container, error) {
	return podContainer(m.Pod, m.Component)
}

func podContainer(pod *corev1.Pod, component string) (*corev1.Container, error) {
	cs := pod.Spec.Containers
	for i := range cs {
		if cs[i].Name == component {
			return &cs[i], nil
		}
	}
	if len(cs) == 1 {
		return &cs[0], nil
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return nil, fmt.Errorf("%s: no container named %q (containers: %s)", component, component, strings.Join(names, ", "))
}

func (m *Manifest) clone() *Manifest {
	c := *m
	c.Pod = m.Pod.DeepCopy()
	c.Warnings = slices.Clone(m.Warnings)
	return &c
}

// Set is the control plane's manifests, in [Components] order.
type Set struct {
	// Dir is the directory the set was read from; empty when generated.
	Dir string
	// Manifests are the manifests present, in Components order.
	Manifests []*Manifest
	// Other lists the other files of Dir that kubelet would also load as
	// static Pods (e.g. kube-vip.yaml, old backups). They are left alone.
	Other []string
}

// Get returns the manifest of component. It fails naming the valid
// components for an unknown name, and the file and directory for a
// component that is not in the set.
func (s *Set) Get(component string) (*Manifest, error) {
	if err := checkComponent(component); err != nil {
		return nil, err
	}
	for _, m := range s.Manifests {
		if m.Component == component {
			return m, nil
		}
	}
	where := "this set"
	if s.Dir != "" {
		where = s.Dir
	}
	return nil, fmt.Errorf("%s: %w in %s", FileName(component), ErrMissing, where)
}

// Has reports whether the set holds component's manifest.
func (s *Set) Has(component string) bool {
	_, err := s.Get(component)
	return err == nil
}

func (s *Set) clone() *Set {
	out := &Set{Dir: s.Dir, Other: slices.Clone(s.Other)}
	for _, m := range s.Manifests {
		out.Manifests = append(out.Manifests, m.clone())
	}
	return out
}

// Read loads the kubeadm manifests of dir (usually
// /etc/kubernetes/manifests). A component whose file is absent is left out
// of the set (an external etcd has no etcd.yaml); Read fails when none of the
// four files exists, when one cannot be read, or when one is not a single v1
// Pod with the component's container.
func Read(dir string) (*Set, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("manifest directory %s is not a directory", dir)
	}
	set := &Set{Dir: dir}
	for _, c := range Components() {
		m, err := readManifest(filepath.Join(dir, FileName(c)), c)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		set.Manifests = append(set.Manifests, m)
	}
	if len(set.Manifests) == 0 {
		var files []string
		for _, c := range Components() {
			files = append(files, FileName(c))
		}
		return nil, fmt.Errorf("%w in %s (looked for %s)", ErrNoManifests, dir, strings.Join(files, ", "))
	}
	// kubelet loads every regular file not starting with a dot (pkg/kubelet/config/file.go).
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest directory: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		if slices.ContainsFunc(Components(), func(c string) bool { return FileName(c) == name }) {
			continue
		}
		set.Other = append(set.Other, name)
	}
	return set, nil
}

func readManifest(path, component string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s manifest: %w", component, err)
	}
	m, err := Parse(component, data)
	if err != nil {
		return nil, invalidManifest{fmt.Errorf("%s: %w", path, err)}
	}
	m.Path = path
	return m, nil
}

// Parse decodes the manifest text of component. Unknown fields are not an
// error (they are kept by the in-place edit) but are listed in Warnings;
// duplicate keys, a second YAML document, a kind other than v1 Pod or a
// Pod without the component's container are.
func Parse(component string, data []byte) (*Manifest, error) {
	if err := checkComponent(component); err != nil {
		return nil, err
	}
	pod, lossy, err := decodePod(data)
	if err != nil {
		return nil, err
	}
	if _, err := podContainer(pod, component); err != nil {
		return nil, err
	}
	m := &Manifest{Component: component, Pod: pod.DeepCopy(), Original: bytes.Clone(data), orig: pod}
	if lossy != nil {
		m.lossy = true
		m.Warnings = append(m.Warnings, fmt.Sprintf("fields unknown to k8s.io/api/core/v1 are kept as written but cannot be re-marshalled: %v", lossy))
	}
	return m, nil
}

// decodePod decodes one v1 Pod: strictly first; when only unknown fields
// stop the strict decoder, leniently, returning the strict error as lossy.
func decodePod(data []byte) (pod *corev1.Pod, lossy error, err error) {
	if err := singleDocument(data); err != nil {
		return nil, nil, err
	}
	pod = new(corev1.Pod)
	if serr := yaml.UnmarshalStrict(data, pod); serr != nil {
		pod = new(corev1.Pod)
		if err := yaml.Unmarshal(data, pod); err != nil {
			return nil, nil, fmt.Errorf("not a valid Pod manifest: %w", parseerr.Explain(serr))
		}
		if !strings.Contains(serr.Error(), "unknown field") {
			return nil, nil, fmt.Errorf("not a valid Pod manifest: %w", parseerr.Explain(serr))
		}
		lossy = parseerr.Explain(serr)
	}
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		return nil, nil, fmt.Errorf("not a static Pod manifest: apiVersion %q, kind %q (want v1 Pod)", pod.APIVersion, pod.Kind)
	}
	return pod, lossy, nil
}

// singleDocument fails when data holds no YAML document or more than one.
func singleDocument(data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var n yamlv3.Node
	if err := dec.Decode(&n); err != nil {
		return parseerr.Explain(err) // "line 4: not valid YAML: ..."
	}
	var extra yamlv3.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("its second YAML document: %w", parseerr.Explain(err))
	}
	return errors.New("holds more than one YAML document; a static Pod manifest is one Pod")
}

package state

import (
	"fmt"
	"path"
	"strings"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/wellknown"
)

// AnnotationBridgeFor marks the DNS bridge Service snapshift creates; its
// value is the namespace/name of the DNS Service it bridges.
const AnnotationBridgeFor = "snapshift.io/bridge-for"

// NormalizePrefix returns an --etcd-prefix value as kube-apiserver uses
// it: rooted, one trailing slash ("kubernetes.io" is "/kubernetes.io/").
// An empty value is the default.
func NormalizePrefix(p string) string {
	if p == "" {
		return wellknown.DefaultPrefix
	}
	p = path.Join("/", p)
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// Canonical returns the key under DefaultPrefix of a key stored under
// prefix: every rule, check and report names objects as a default-prefix
// cluster stores them. ok is false for a key outside prefix.
func Canonical(prefix, stored string) (string, bool) {
	rest, ok := strings.CutPrefix(stored, prefix)
	if !ok {
		return "", false
	}
	if prefix == wellknown.DefaultPrefix {
		return stored, true
	}
	return wellknown.DefaultPrefix + rest, true
}

// Stored returns the key under prefix of a canonical key (one under
// DefaultPrefix); other keys are returned as they are.
func Stored(prefix, canonical string) string {
	if prefix == wellknown.DefaultPrefix {
		return canonical
	}
	if rest, ok := strings.CutPrefix(canonical, wellknown.DefaultPrefix); ok {
		return prefix + rest
	}
	return canonical
}

// DetectPrefix finds where the snapshot keeps the cluster's objects: the
// prefix of the kube-system Namespace's key, which every cluster has. ""
// when there is none. Under the default prefix it is one lookup; another
// prefix costs one walk of the index.
func DetectPrefix(ix *snapshot.Index) string {
	const ns = "namespaces/kube-system"
	if _, ok := ix.Lookup([]byte(wellknown.DefaultPrefix + ns)); ok {
		return wellknown.DefaultPrefix
	}
	for _, kr := range ix.LiveKeysWithPrefix("") {
		if p, ok := strings.CutSuffix(kr.Key, ns); ok && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
			return p
		}
	}
	return ""
}

// ResolvePrefix is the prefix a run reads: the given one (normalized), or
// the detected one, or the default when the snapshot holds no cluster.
func ResolvePrefix(ix *snapshot.Index, given string) string {
	if given != "" {
		return NormalizePrefix(given)
	}
	if p := DetectPrefix(ix); p != "" {
		return p
	}
	return wellknown.DefaultPrefix
}

// CheckPrefix refuses a given --etcd-prefix under which the snapshot keeps
// no cluster (no kube-system Namespace) while it keeps one under another:
// every command would read nothing and say so as if all were well. An
// *option.Error naming the option and the right value; nil when given is
// empty, holds a cluster, or the snapshot holds none anywhere.
func CheckPrefix(ix *snapshot.Index, given string) error {
	if given == "" {
		return nil
	}
	p := NormalizePrefix(given)
	if _, ok := ix.Lookup([]byte(p + "namespaces/kube-system")); ok {
		return nil
	}
	if d := DetectPrefix(ix); d != "" && d != p {
		return option.Errorf("EtcdPrefix", "the snapshot keeps the cluster's objects under %q, not %q: give {} %s (kube-apiserver's --etcd-prefix), or leave it out",
			d, p, strings.TrimSuffix(d, "/"))
	}
	return nil
}

// MissingObjects explains why a rule found none of the objects it must see
// (what names them, e.g. "Services") under the canonical prefix of a
// snapshot read under used: the cluster's objects are under another
// --etcd-prefix, or there are none.
func MissingObjects(ix *snapshot.Index, what, prefix, used string) string {
	where := Stored(used, prefix)
	switch p := DetectPrefix(ix); {
	case p == "":
		return fmt.Sprintf("the snapshot holds no %s under %s and no kube-system Namespace at all: is it a Kubernetes etcd?", what, where)
	case p != used:
		return fmt.Sprintf("the snapshot keeps the cluster's objects under %q, not %q: give --etcd-prefix %s (kube-apiserver's --etcd-prefix)", p, used, strings.TrimSuffix(p, "/"))
	}
	return fmt.Sprintf("the snapshot holds no %s under %s: nothing would move", what, where)
}

package state

import (
	"fmt"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/snapshot"
)

// Object is one live key shown to a rule.
type Object struct {
	// Key is the canonical etcd key, e.g.
	// /registry/services/specs/default/kubernetes: under the default prefix
	// whatever --etcd-prefix the cluster used (Meta.Key is the stored one).
	Key string
	// Revision is the object's revision in the input; Meta its stored
	// KeyValue (Key and Value point into the input; do not modify them).
	Revision snapshot.Revision
	Meta     snapshot.KV
	// Value is the decoded object. A rule that returns Replace has changed
	// Value.Obj in place; the next rule sees the changed object.
	Value *codec.Object
	// Encryption is how the value was stored (provider "identity" when it
	// was not encrypted); a changed value is re-encrypted the same way.
	Encryption encryption.Info
}

// As returns the object's decoded value as a T (*corev1.ConfigMap,
// *unstructured.Unstructured for a custom resource, ...), or an error
// saying what is stored instead; what names T in it ("a ConfigMap").
func As[T any](o *Object, what string) (T, error) {
	t, ok := o.Value.Obj.(T)
	if !ok {
		return t, fmt.Errorf("stored object is %s, not %s", o.Value.GVK, what)
	}
	return t, nil
}

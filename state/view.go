package state

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/wellknown"
)

// View is random, read-only access to the live state of the input, for
// rules that prepare before the stream. Every call decodes afresh; callers
// may keep and modify what they get.
type View struct {
	snap  *snapshot.Snapshot
	index *snapshot.Index
	codec *codec.Codec
	enc   *encryption.Config
	// prefix is where the snapshot keeps the objects (--etcd-prefix); the
	// View presents them under DefaultPrefix.
	prefix string
}

// NewView returns a View over an opened and indexed snapshot. enc decrypts
// values encrypted at rest; it may be nil. prefix is where the cluster keeps
// its objects (see ResolvePrefix); "" is the default. Whatever it is, the
// View names every object by its canonical key, under DefaultPrefix.
func NewView(s *snapshot.Snapshot, ix *snapshot.Index, c *codec.Codec, enc *encryption.Config, prefix string) *View {
	return &View{snap: s, index: ix, codec: c, enc: enc, prefix: NormalizePrefix(prefix)}
}

// Prefix is where the snapshot keeps the objects the View presents.
func (v *View) Prefix() string { return v.prefix }

// Index is the input's index (revisions, counts).
func (v *View) Index() *snapshot.Index { return v.index }

// Keys lists the live keys under prefix, sorted by key. Rules list
// through the View, never the Index: the View presents every key under
// the apiserver's default prefix, whatever --etcd-prefix the cluster used.
func (v *View) Keys(prefix string) []snapshot.KeyRev {
	out := v.index.LiveKeysWithPrefix(Stored(v.prefix, prefix))
	if v.prefix != wellknown.DefaultPrefix {
		for i := range out {
			out[i].Key, _ = Canonical(v.prefix, out[i].Key)
		}
	}
	return out
}

// Count is how many live keys are under prefix: counted by the index when
// a rule asked it to (transform.Counter), else listed.
func (v *View) Count(prefix string) int {
	if n, ok := v.index.LiveCount(Stored(v.prefix, prefix)); ok {
		return n
	}
	return len(v.Keys(prefix))
}

// Missing explains why a rule found none of the objects it must see (what
// names them, e.g. "Services", under prefix).
func (v *View) Missing(what, prefix string) string {
	return MissingObjects(v.index, what, prefix, v.prefix)
}

// WrongPrefix is, when the snapshot keeps the cluster's objects under
// another prefix than the one read, an *option.Error naming the etcd prefix
// option and the right value (an option this snapshot cannot take, as an old
// range it does not hold); nil otherwise. A rule that finds none of its
// objects asks it first.
func (v *View) WrongPrefix() error {
	if p := DetectPrefix(v.index); p != "" && p != v.prefix {
		return option.Errorf("EtcdPrefix", "the snapshot keeps the cluster's objects under %q, not %q: give {} %s (kube-apiserver's --etcd-prefix)",
			p, v.prefix, strings.TrimSuffix(p, "/"))
	}
	return nil
}

// Codec is the codec in use.
func (v *View) Codec() *codec.Codec { return v.codec }

// Get decodes the live object at key; ok is false if the key is not live.
func (v *View) Get(key string) (obj *Object, ok bool, err error) {
	rev, ok := v.index.Lookup([]byte(Stored(v.prefix, key)))
	if !ok {
		return nil, false, nil
	}
	o, err := v.decodeAt(key, rev)
	return o, o != nil, err
}

// List decodes every live object whose key starts with prefix, sorted by key.
func (v *View) List(prefix string) ([]*Object, error) {
	var out []*Object
	err := v.Each(prefix, func(o *Object) error {
		out = append(out, o)
		return nil
	})
	return out, err
}

// Each decodes the live objects under prefix one at a time, in key order,
// and calls fn with each: what fn does not keep is garbage at once, so a
// rule that needs a little of every object (addresses, names) does not hold
// them all.
func (v *View) Each(prefix string, fn func(*Object) error) error {
	for _, kr := range v.Keys(prefix) {
		o, err := v.decodeAt(kr.Key, kr.Rev)
		if err != nil {
			return err
		}
		if o == nil {
			continue
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// decodeAt decodes key's value at its live revision rev (nil if absent).
func (v *View) decodeAt(key string, rev snapshot.Revision) (*Object, error) {
	stored := Stored(v.prefix, key)
	kv, ok, err := v.snap.Get(rev)
	if err != nil || !ok {
		return nil, err
	}
	plain, info, err := Decrypt(v.enc, stored, kv.Value) // bound to the stored key
	if err != nil {
		return nil, err
	}
	val, err := v.codec.Decode(plain)
	if err != nil {
		return nil, DecodeError(v.snap.Path, stored, rev, err)
	}
	return &Object{Key: key, Revision: rev, Meta: kv, Value: val, Encryption: info}, nil
}

// Raw returns the stored value bytes at key without decoding.
func (v *View) Raw(key string) ([]byte, bool, error) {
	rev, ok := v.index.Lookup([]byte(Stored(v.prefix, key)))
	if !ok {
		return nil, false, nil
	}
	kv, ok, err := v.snap.Get(rev)
	return kv.Value, ok, err
}

// ErrRefused is wrapped by errors that refuse a change the input or the
// options make unsafe (a rule's refusal, an object that does not round-trip).
var ErrRefused = errors.New("refused")

// ErrEncrypted is wrapped when a value a rule needs is encrypted and cannot
// be decrypted here (no configuration, or KMS).
var ErrEncrypted = errors.New("encrypted at rest")

// Decrypt returns the plaintext of a stored value and how it was stored.
func Decrypt(enc *encryption.Config, key string, value []byte) ([]byte, encryption.Info, error) {
	identity := encryption.Info{Provider: encryption.ProviderIdentity}
	if codec.Detect(value) != codec.Encrypted {
		return value, identity, nil
	}
	info, _ := codec.ParseEncrypted(value)
	if info.Provider == encryption.ProviderKMS {
		return nil, identity, fmt.Errorf("%w: %s is encrypted with KMS plugin %q, which cannot be decrypted offline; a rule needs to read it", ErrEncrypted, key, info.KeyName)
	}
	if enc == nil {
		return nil, identity, fmt.Errorf("%w: %w", ErrEncrypted, option.Errorf("Encryption",
			"%s is encrypted (%s key %q): give the apiserver's EncryptionConfiguration with {}", key, info.Provider, info.KeyName))
	}
	plain, how, err := enc.Decrypt(key, value)
	if err != nil {
		return nil, identity, fmt.Errorf("%w: %s: %w", ErrEncrypted, key, err)
	}
	return plain, how, nil
}

// DecodeError classifies a claimed value that does not decode: a type this
// build does not know (a newer cluster) is a refusal to edit what it cannot
// write back faithfully; bytes that are no Kubernetes value are bad input.
func DecodeError(path, key string, rev snapshot.Revision, err error) error {
	where := fmt.Sprintf("%s (revision %s)", key, snapshot.RevisionString(rev))
	if errors.Is(err, codec.ErrUnknownType) {
		return fmt.Errorf("%w: %s: %w; a rule claims this key and cannot edit it faithfully", ErrRefused, where, err)
	}
	return &snapshot.InputError{Path: path, Problem: where + " does not decode", Err: err}
}

// ListCustom lists the custom resources under prefix (stored as JSON,
// decoded as unstructured) with their objects; a stored object of another
// type, or of another kind than kind (when kind is not ""), is an error.
func ListCustom(v *View, prefix, kind string) ([]*Object, []*unstructured.Unstructured, error) {
	objs, err := v.List(prefix)
	if err != nil {
		return nil, nil, err
	}
	us := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		u, ok := o.Value.Obj.(*unstructured.Unstructured)
		if !ok || (kind != "" && o.Value.GVK.Kind != kind) {
			return nil, nil, fmt.Errorf("%s: stored object is %s, not a %s custom resource", o.Key, o.Value.GVK, strings.TrimSpace(kind+" "))
		}
		us[i] = u
	}
	return objs, us, nil
}

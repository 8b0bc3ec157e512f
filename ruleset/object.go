package ruleset

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/codec"
)

// ObjectJSON is an object's JSON form, as the apiserver would serve it: a
// custom resource as stored, a built-in object through the scheme's JSON
// serializer.
func ObjectJSON(c *codec.Codec, val *codec.Object) (any, error) {
	var b []byte
	var err error
	if u, ok := val.Obj.(*unstructured.Unstructured); ok {
		b, err = json.Marshal(u.Object)
	} else {
		b, err = c.EncodeJSON(val.Obj)
	}
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// MetaOf reads what rules match on from an object's JSON form.
func MetaOf(doc any) Meta {
	var m Meta
	if s, ok := at(doc, "/metadata/namespace").(string); ok {
		m.Namespace = s
	}
	if s, ok := at(doc, "/metadata/name").(string); ok {
		m.Name = s
	}
	if l, ok := at(doc, "/metadata/labels").(map[string]any); ok {
		m.Labels = map[string]string{}
		for k, v := range l {
			if s, ok := v.(string); ok {
				m.Labels[k] = s
			}
		}
	}
	return m
}

// at is the value at JSON pointer p, or nil.
func at(doc any, p string) any {
	v, _ := At(doc, p)
	return v
}

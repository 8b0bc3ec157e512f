package ruleset

import (
	"encoding/base64"
	"fmt"
	"sort"
)

// ServerOwned are the metadata fields kube-apiserver sets itself and
// ignores or resets in a write: a rule that changes one is refused.
var ServerOwned = []string{
	"/metadata/resourceVersion",
	"/metadata/uid",
	"/metadata/creationTimestamp",
	"/metadata/deletionTimestamp",
	"/metadata/generation",
	"/metadata/managedFields",
}

// serverWrites applies kube-apiserver's write rules to a rule's result,
// out, made from in: a Secret's stringData is folded into data, as the
// Secret strategy does (each value base64-encoded, overriding data's key
// of the same name; stringData itself is never stored), and a change of a
// server-owned field, or of a built-in object's status (kept behind the
// status subresource) unless the rule says editStatus, is refused.
func (r *Rule) serverWrites(in, out any) error {
	for _, p := range ServerOwned {
		if changed(in, out, p) {
			return fmt.Errorf("%s is set by kube-apiserver, which would ignore or reset it: a rule cannot change it", p)
		}
	}
	if !r.EditStatus && !r.Custom() && changed(in, out, "/status") {
		return fmt.Errorf("/status of a built-in object is written through its status subresource: say editStatus: true to change it anyway")
	}
	if kindOf(out) == "Secret" && at(out, "/apiVersion") == "v1" {
		return foldStringData(out)
	}
	return nil
}

func changed(in, out any, p string) bool {
	a, okA := get(in, p)
	b, okB := get(out, p)
	return okA != okB || (okA && !equalJSON(a, b))
}

// foldStringData moves a Secret's stringData into data, as
// pkg/registry/core/secret's PrepareForCreate/Update do.
func foldStringData(doc any) error {
	obj, _ := doc.(map[string]any)
	raw, has := obj["stringData"]
	if !has {
		return nil
	}
	delete(obj, "stringData")
	if raw == nil {
		return nil
	}
	sd, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("stringData must be an object of strings")
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	keys := make([]string, 0, len(sd))
	for k := range sd {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, ok := sd[k].(string)
		if !ok {
			return fmt.Errorf("stringData.%s must be a string", k)
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	obj["data"] = data
	return nil
}

package rules

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"

	"github.com/snapshift/snapshift/wellknown"
)

// NameK3sApplied is the k3s-applied rule.
const NameK3sApplied = "k3s-applied"

// AnnotationApplied is where wrangler's apply (rancher/wrangler pkg/apply,
// desiredset_compare.go LabelApplied) keeps the object it last applied:
// k3s's deploy controller applies every packaged manifest through it
// (CoreDNS, local-storage, metrics-server, traefik's HelmChart; RKE2's
// charts) and computes its next patch against this copy.
const AnnotationApplied = "objectset.rio.cattle.io/applied"

// K3sApplied maps the ranges and moved Service addresses inside wrangler's
// applied annotation, so that the copy agrees with the moved object: the
// three-way patch of the next re-apply then changes nothing the rules
// moved. A value moves in the copy only where the object now holds it. The annotation is decoded and re-encoded as wrangler does
// (appliedFromAnnotation / compressAndEncode): JSON, gzip (default level),
// base64 without padding; a plain-JSON annotation (one starting with "{",
// which wrangler also reads) stays plain. Only whole string values that are
// an old CIDR, a list of them, or a moved Service address are changed.
type K3sApplied struct {
	plan  *Plan
	notes []string
	seen  int
}

var k3sAppliedEntry = rangeFollower(Entry{
	Name:    NameK3sApplied,
	Summary: "k3s and RKE2: map the ranges and moved Service addresses inside wrangler's applied annotation (objectset.rio.cattle.io/applied: gzip+base64 JSON) on the objects k3s re-applies at start",
	Touches: []string{"services, helmcharts.helm.cattle.io, helmchartconfigs.helm.cattle.io (annotation " + AnnotationApplied + ")"},
	New:     func(_ Options, p *Plan) transform.Rule { return &K3sApplied{plan: p} },
})

func (r *K3sApplied) Name() string { return NameK3sApplied }

// Prefixes are the kinds k3s and RKE2 re-apply that hold range values:
// Services (clusterIP; the service-cidr rule decodes them anyway) and
// helm-controller's resources. The ConfigMaps, Deployments and DaemonSets of
// the packaged manifests hold none, and claiming them would decode every one
// of a large cluster's.
func (r *K3sApplied) Prefixes() []string {
	return []string{wellknown.PrefixServices, state.PrefixHelmCharts, state.PrefixHelmChartConfigs}
}

func (r *K3sApplied) Notes() []string {
	if r.seen == 0 {
		return r.notes
	}
	return append([]string{fmt.Sprintf("%d objects carry wrangler's applied annotation: k3s re-applies them at start; their copies of the moved values were mapped", r.seen)}, r.notes...)
}

// Apply edits the annotation of one object, if it has one.
func (r *K3sApplied) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	m, err := meta.Accessor(obj.Value.Obj)
	if err != nil {
		return transform.Result{}, nil
	}
	ann := m.GetAnnotations()
	val, ok := ann[AnnotationApplied]
	if !ok || val == "" {
		return transform.Result{}, nil
	}
	r.seen++
	doc, compressed, err := DecodeApplied(val)
	if err != nil {
		return transform.Result{}, fmt.Errorf("annotation %s: %w", AnnotationApplied, err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return transform.Result{}, fmt.Errorf("annotation %s: the applied object is not JSON: %w", AnnotationApplied, err)
	}
	live, err := objectTree(obj.Value.Obj)
	if err != nil {
		return transform.Result{}, err
	}
	var olds, news []string
	// A value moves in the copy only where the object holds the moved value
	// (a rule before this one moved it) or is about to (the fields the
	// service-cidr and helm-chart-values rules move): the copy then agrees
	// with the object, and a value the rules leave (a chart's spec.set that
	// RKE2 does not inject) stays in the copy too.
	injected := live["kind"] == "HelmChart" && m.GetAnnotations()[state.AnnotationInjectClusterConfig] == "true"
	v, changed := mapDeep(v, live, nil, func(s string, cur any, path []string) (string, bool) {
		n, ok := mapValueList(r.plan, s)
		if !ok || (cur != n && (cur != s || !movedField(live, injected, path))) {
			return s, false
		}
		olds, news = append(olds, s), append(news, n)
		return n, true
	})
	if !changed {
		return transform.Result{}, nil
	}
	out, err := json.Marshal(v) // wrangler: json.Marshal of the pruned map
	if err != nil {
		return transform.Result{}, err
	}
	ann[AnnotationApplied] = string(out)
	if compressed {
		if ann[AnnotationApplied], err = EncodeApplied(out); err != nil {
			return transform.Result{}, err
		}
	}
	m.SetAnnotations(ann)
	return transform.Result{Action: transform.Replace, Changes: []transform.Change{{
		Field: "metadata.annotations[" + AnnotationApplied + "]", Old: strings.Join(olds, ","), New: strings.Join(news, ",")}}}, nil
}

// DecodeApplied reads wrangler's applied annotation: plain JSON when it
// starts with "{", else base64 (standard alphabet, no padding) of a gzip
// stream of JSON. compressed says which.
func DecodeApplied(s string) (doc []byte, compressed bool, err error) {
	if strings.HasPrefix(s, "{") {
		return []byte(s), false, nil
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, true, fmt.Errorf("not base64 (raw standard encoding): %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, true, fmt.Errorf("not gzip: %w", err)
	}
	doc, err = io.ReadAll(zr)
	if err != nil {
		return nil, true, fmt.Errorf("damaged gzip stream: %w", err)
	}
	return doc, true, nil
}

// EncodeApplied encodes doc as wrangler's compressAndEncode does: gzip at
// the default level, base64 with the standard alphabet and no padding.
func EncodeApplied(doc []byte) (string, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(doc); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(buf.Bytes()), nil
}

// mapDeep replaces every string in a decoded JSON value that fn maps, in
// maps and lists at any depth; fn also sees the value at the same path in
// live (nil where live has none) and the path.
func mapDeep(v, live any, path []string, fn func(s string, cur any, path []string) (string, bool)) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		lm, _ := live.(map[string]any)
		changed := false
		for k, e := range x {
			if n, ok := mapDeep(e, lm[k], append(path, k), fn); ok {
				x[k], changed = n, true
			}
		}
		return x, changed
	case []any:
		ll, _ := live.([]any)
		changed := false
		for i, e := range x {
			var cur any
			if i < len(ll) {
				cur = ll[i]
			}
			if n, ok := mapDeep(e, cur, append(path, "[]"), fn); ok {
				x[i], changed = n, true
			}
		}
		return x, changed
	case string:
		return fn(x, live, path)
	}
	return v, false
}

// movedField reports whether path is a field the rules before this one
// move in an object of live's kind: a Service's clusterIP(s), an injected
// HelmChart's cluster values.
func movedField(live map[string]any, injected bool, path []string) bool {
	p := strings.Join(path, ".")
	switch live["kind"] {
	case "Service":
		return p == "spec.clusterIP" || p == "spec.clusterIPs.[]"
	case "HelmChart":
		return injected && len(path) == 3 && path[0] == "spec" && path[1] == "set" && slices.Contains(injectedKeys, path[2])
	}
	return false
}

// objectTree is obj as a JSON tree (maps, lists, strings, numbers).
func objectTree(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

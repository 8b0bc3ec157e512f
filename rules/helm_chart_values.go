package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

// NameHelmChartValues is the helm-chart-values rule.
const NameHelmChartValues = "helm-chart-values"

// injectedKeys are the spec.set keys RKE2 writes the cluster's ranges into
// (rancher/rke2 pkg/bootstrap/bootstrap.go, setChartValues: flat keys with
// dots, strings; lists comma-joined, the v4/v6 forms one family each).
var injectedKeys = []string{"global.clusterCIDR", "global.clusterCIDRv4", "global.clusterCIDRv6", "global.clusterDNS", "global.serviceCIDR"}

// HelmChartValues moves the ranges in helm-controller's custom resources
// (helm.cattle.io/v1), which k3s and RKE2 deploy their charts with:
//   - the cluster values RKE2 injects into spec.set of HelmCharts annotated
//     rke2.cattle.io/inject-cluster-config: "true" (global.clusterCIDR, its
//     v4/v6 forms, clusterDNS, serviceCIDR). RKE2 rewrites them at every
//     start from its flags; moved here, they already agree, and the
//     helm-controller upgrade Job that a changed spec.set triggers runs
//     with the values the rules chose.
//   - spec.valuesContent of HelmCharts and HelmChartConfigs: the user's
//     YAML values as a string (CNI pool overrides live there); edited as a
//     document, only scalars that are an old CIDR, a list of them, or a
//     moved Service address change, every other byte is kept.
type HelmChartValues struct {
	plan  *Plan
	notes []string
}

var helmChartValuesEntry = rangeFollower(Entry{
	Name: NameHelmChartValues,
	Summary: "k3s and RKE2: map the cluster values RKE2 injects into HelmChart spec.set (global.clusterCIDR[v4|v6], serviceCIDR, clusterDNS) " +
		"and the CIDRs inside HelmChart and HelmChartConfig spec.valuesContent (YAML in a string, edited in place)",
	Touches: []string{"helmcharts.helm.cattle.io (spec.set injected values, spec.valuesContent)", "helmchartconfigs.helm.cattle.io (spec.valuesContent)"},
	New:     func(_ Options, p *Plan) transform.Rule { return &HelmChartValues{plan: p} },
})

func (r *HelmChartValues) Name() string { return NameHelmChartValues }
func (r *HelmChartValues) Prefixes() []string {
	return []string{state.PrefixHelmCharts, state.PrefixHelmChartConfigs}
}
func (r *HelmChartValues) Notes() []string { return r.notes }

// Apply edits one HelmChart or HelmChartConfig.
func (r *HelmChartValues) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	u, ok := obj.Value.Obj.(*unstructured.Unstructured)
	if !ok {
		return transform.Result{}, fmt.Errorf("stored object is %s, not a custom resource", obj.Value.GVK)
	}
	var changes []transform.Change
	if u.GetKind() == "HelmChart" && u.GetAnnotations()[state.AnnotationInjectClusterConfig] == "true" {
		changes = r.editSet(u)
	}
	vc, found, err := unstructured.NestedString(u.Object, "spec", "valuesContent")
	if err != nil {
		return transform.Result{}, fmt.Errorf("spec.valuesContent: %w", err)
	}
	if found && vc != "" {
		cc := &ClusterConfig{plan: r.plan}
		doc, ch, err := editScalars(vc, func(s string) (string, bool) {
			if n, ok := cc.mapScalar(s); ok {
				return n, true
			}
			return mapValueList(r.plan, s)
		})
		if err != nil {
			return transform.Result{}, fmt.Errorf("spec.valuesContent: %w", err)
		}
		if len(ch) > 0 {
			if err := unstructured.SetNestedField(u.Object, doc, "spec", "valuesContent"); err != nil {
				return transform.Result{}, err
			}
			for _, c := range ch {
				c.Field = "spec.valuesContent " + c.Field
				changes = append(changes, c)
			}
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	r.notes = append(r.notes, fmt.Sprintf("%s %s/%s: helm-controller runs an upgrade Job for the changed values once the cluster is up",
		u.GetKind(), u.GetNamespace(), u.GetName()))
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// editSet maps the injected cluster values in spec.set.
func (r *HelmChartValues) editSet(u *unstructured.Unstructured) []transform.Change {
	set, ok, _ := unstructured.NestedMap(u.Object, "spec", "set")
	if !ok {
		return nil
	}
	var changes []transform.Change
	for _, k := range injectedKeys {
		s, ok := set[k].(string)
		if !ok || s == "" {
			continue
		}
		if n, ok := mapValueList(r.plan, s); ok {
			set[k] = n
			changes = append(changes, transform.Change{Field: "spec.set[" + k + "]", Old: s, New: n})
		}
	}
	if len(changes) > 0 {
		// SetNestedMap deep-copies; keys other than the injected ones are kept as they were.
		_ = unstructured.SetNestedMap(u.Object, set, "spec", "set")
	}
	slices.SortFunc(changes, func(a, b transform.Change) int { return strings.Compare(a.Field, b.Field) })
	return changes
}

package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// BootstrapToken is a kubeadm bootstrap token "<id>.<secret>" to write
// into the snapshot so nodes can rejoin at once after a new CA.
type BootstrapToken struct {
	ID, Secret string
	// Expires is when the token stops working, written as given: the
	// caller reads its own clock (rebuild: its start plus 24 hours,
	// kubeadm's default TTL), the rules read none. Zero: 24 hours after the
	// stamp the created objects carry (Plan.creationStamp), for tests.
	Expires time.Time
}

// DefaultTokenTTL is how long a bootstrap token lasts when kubeadm's
// default TTL is kept.
const DefaultTokenTTL = 24 * time.Hour

// ValidBootstrapToken checks that t is a bootstrap token kube-apiserver
// accepts: "[a-z0-9]{6}.[a-z0-9]{16}", checked as k8s.io/cluster-bootstrap
// does (the secret in constant time).
func ValidBootstrapToken(t BootstrapToken) error {
	if !bootstraputil.IsValidBootstrapToken(bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret)) {
		return fmt.Errorf("bootstrap token %q is not of the form [a-z0-9]{6}.[a-z0-9]{16}", t.ID+".<secret>")
	}
	return nil
}

// ClusterInfo follows a new cluster CA into the snapshot: kube-public's
// cluster-info kubeconfig (what `kubeadm join` checks the CA hash against)
// gets the new CA data, every namespace's kube-root-ca.crt ConfigMap its
// ca.crt, and optionally a fresh bootstrap token Secret is created so
// nodes can rejoin at once. kube-controller-manager's bootstrap signer
// re-signs cluster-info. Its root-ca publisher would rewrite kube-root-ca.crt
// too, but only once it runs: a pod started before (the lab saw kube-proxy
// on a control-plane node, whose kubelet starts its pods as soon as the
// restored kube-apiserver answers) projects the old CA, and a client that
// reads it once at start (kube-proxy, every client-go in-cluster config)
// then trusts no certificate of the new cluster until it restarts; with
// kube-proxy down there, the CNI agent on that node cannot reach the
// apiserver's VIP, and the staged restart's first stage waits for it.
type ClusterInfo struct {
	ca     []byte
	server string
	token  *BootstrapToken
	plan   *Plan
	stamp  time.Time // Plan.creationStamp, read in Prepare
	notes  []string
	// rootCAs counts the kube-root-ca.crt ConfigMaps given the new CA.
	rootCAs int
}

func (r *ClusterInfo) Name() string       { return NameClusterInfo }
func (r *ClusterInfo) Prefixes() []string { return []string{wellknown.PrefixConfigMaps} }
func (r *ClusterInfo) Notes() []string {
	if r.rootCAs > 0 {
		return append(slices.Clone(r.notes), fmt.Sprintf("%d kube-root-ca.crt ConfigMaps carry the new CA: pods started before kube-controller-manager's root-ca publisher runs trust the new cluster", r.rootCAs))
	}
	return r.notes
}

func (r *ClusterInfo) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	if strings.HasSuffix(obj.Key, "/"+wellknown.RootCAConfigMap) && strings.Count(strings.TrimPrefix(obj.Key, wellknown.PrefixConfigMaps), "/") == 1 {
		return r.rootCA(obj)
	}
	if obj.Key != wellknown.KeyClusterInfo {
		return transform.Result{}, nil
	}
	cm, err := state.As[*corev1.ConfigMap](obj, "a ConfigMap")
	if err != nil {
		return transform.Result{}, err
	}
	kc, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		return transform.Result{}, fmt.Errorf("data[kubeconfig]: %w", err)
	}
	var changes []transform.Change
	for name, c := range kc.Clusters {
		if string(c.CertificateAuthorityData) != string(r.ca) {
			c.CertificateAuthorityData = r.ca
			changes = append(changes, transform.Change{Field: "data[kubeconfig] clusters[" + name + "].certificate-authority-data", New: "the new cluster CA"})
		}
		if r.server != "" && c.Server != r.server {
			changes = append(changes, transform.Change{Field: "data[kubeconfig] clusters[" + name + "].server", Old: c.Server, New: r.server})
			c.Server = r.server
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return transform.Result{}, err
	}
	cm.Data["kubeconfig"] = string(b)
	r.notes = append(r.notes, "cluster-info carries the new CA; kube-controller-manager's bootstrap signer re-signs it (jws-kubeconfig-*)")
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// rootCA puts the new CA into a namespace's kube-root-ca.crt, as
// kube-controller-manager's root-ca publisher will (data ca.crt).
func (r *ClusterInfo) rootCA(obj *state.Object) (transform.Result, error) {
	cm, err := state.As[*corev1.ConfigMap](obj, "a ConfigMap")
	if err != nil {
		return transform.Result{}, err
	}
	if cm.Data["ca.crt"] == string(r.ca) {
		return transform.Result{}, nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["ca.crt"] = string(r.ca)
	r.rootCAs++
	return transform.Result{Action: transform.Replace, Changes: []transform.Change{{Field: "data[ca.crt]", New: "the new cluster CA"}}}, nil
}

// kubeadm's defaults for a bootstrap token (cmd/kubeadm/app/apis/bootstraptoken/v1).
const (
	defaultTokenGroup = "system:bootstrappers:kubeadm:default-node-token"
)

// Lists: the Services, whose newest creationTimestamp the bootstrap token
// Secret carries.
func (r *ClusterInfo) Lists() []string { return []string{wellknown.PrefixServices} }

// Prepare reads the stamp the bootstrap token Secret carries.
func (r *ClusterInfo) Prepare(_ context.Context, v *state.View) error {
	if r.token == nil {
		return nil
	}
	var err error
	r.stamp, err = r.plan.creationStamp(v)
	return err
}

// Finish writes the bootstrap token Secret, as kubeadm creates one.
func (r *ClusterInfo) Finish(context.Context) ([]transform.NewObject, error) {
	if r.token == nil {
		return nil, nil
	}
	name := bootstraputil.BootstrapTokenSecretName(r.token.ID)
	key := wellknown.PrefixSecrets + metav1.NamespaceSystem + "/" + name
	now := r.stamp // from the input, not a clock: the same bytes on every run
	expires := r.token.Expires.UTC().Truncate(time.Second)
	if r.token.Expires.IsZero() {
		expires = now.Add(DefaultTokenTTL)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, UID: newUID(key, r.token.ID), CreationTimestamp: metav1.NewTime(now)},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       bootstrapTokenData(*r.token, expires),
	}
	r.notes = append(r.notes, fmt.Sprintf("bootstrap token %s written (expires %s); the join command is in the runbook", r.token.ID, expires.Format(time.RFC3339)))
	return []transform.NewObject{{Key: key, Value: &codec.Object{Encoding: codec.Protobuf, GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Obj: s},
		Changes: []transform.Change{{Field: "bootstrap token", New: r.token.ID + " (secret not shown)"}}}}, nil
}

// bootstrapTokenData is the Secret's data as kubeadm encodes a token with
// its default usages and group.
func bootstrapTokenData(t BootstrapToken, expires time.Time) map[string][]byte {
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:          []byte(t.ID),
		bootstrapapi.BootstrapTokenSecretKey:      []byte(t.Secret),
		bootstrapapi.BootstrapTokenExpirationKey:  []byte(expires.UTC().Format(time.RFC3339)),
		bootstrapapi.BootstrapTokenExtraGroupsKey: []byte(defaultTokenGroup),
		bootstrapapi.BootstrapTokenDescriptionKey: []byte("written by snapshift rebuild so nodes can rejoin the rebuilt control plane"),
	}
	for _, usage := range bootstrapapi.KnownTokenUsages {
		data[bootstrapapi.BootstrapTokenUsagePrefix+usage] = []byte("true")
	}
	return data
}

// NameClusterInfo is the cluster-info rule.
const NameClusterInfo = "cluster-info"

// ClusterInfoOptions are the cluster-info rule's options. The rebuild
// command sets them when it generates a new PKI; they are not flags.
type ClusterInfoOptions struct {
	// ClusterCA is the PEM of a new cluster CA: the cluster-info rule puts it
	// into kube-public/cluster-info. Empty: cluster-info is off.
	ClusterCA []byte `json:"-"`
	// ClusterInfoServer, when set, also replaces cluster-info's server URL.
	ClusterInfoServer string `json:"-"`
	// BootstrapToken, with ClusterCA, is written as a bootstrap token Secret.
	BootstrapToken *BootstrapToken `json:"-"`
}

var clusterInfoEntry = Entry{
	Name:    NameClusterInfo,
	Summary: "put a new cluster CA (and server) into kube-public/cluster-info; optionally write a bootstrap token so nodes can rejoin",
	Touches: []string{"configmaps kube-public/cluster-info (kubeconfig)", "configmaps */kube-root-ca.crt (ca.crt)", "secrets kube-system/bootstrap-token-<id> (created)"},
	Enabled: func(o *Options) bool { return len(o.ClusterCA) > 0 },
	New: func(o Options, p *Plan) transform.Rule {
		return &ClusterInfo{ca: o.ClusterCA, server: o.ClusterInfoServer, token: o.BootstrapToken, plan: p}
	},
	Example: func() Options {
		return Options{ClusterInfoOptions: ClusterInfoOptions{ClusterCA: []byte("-----BEGIN CERTIFICATE-----\nRVhBTVBMRQ==\n-----END CERTIFICATE-----\n")}}
	},
	Validate: func(o *Options) error {
		if o.BootstrapToken == nil {
			return nil
		}
		if len(o.ClusterCA) == 0 {
			return option.Errorf("BootstrapToken", "a bootstrap token is written with a new cluster CA: {} needs {ClusterCA}")
		}
		if err := ValidBootstrapToken(*o.BootstrapToken); err != nil {
			return option.Errorf("BootstrapToken", "{}: %w", err)
		}
		return nil
	},
	Options: func(o *Options) []Option {
		return []Option{
			{Field: "ClusterCA", Name: "cluster-ca", Value: &o.ClusterCA, Usage: "PEM of the new cluster CA (set by rebuild when it generates a PKI)"},
			{Field: "ClusterInfoServer", Name: "cluster-info-server", Value: &o.ClusterInfoServer, Usage: "the API server URL cluster-info gives joining nodes"},
			{Field: "BootstrapToken", Name: "bootstrap-token", Value: &o.BootstrapToken, Usage: "a bootstrap token <id>.<secret> to write as a Secret"},
		}
	},
}

// ParseBootstrapToken parses "<id>.<secret>" as kubeadm writes tokens.
func ParseBootstrapToken(s string) (*BootstrapToken, error) {
	id, secret, _ := strings.Cut(s, ".")
	t := &BootstrapToken{ID: id, Secret: secret}
	if err := ValidBootstrapToken(*t); err != nil {
		return nil, err
	}
	return t, nil
}

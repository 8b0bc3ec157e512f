package sample

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects returns the sample cluster's objects in the order a kubeadm cluster would have created
// them: kubeadm init (control plane, kube-system add-ons), flannel, workers joining, then the
// applications. History() continues from there.
func Objects() ([]Entry, error) {
	b, err := newBuilder()
	if err != nil {
		return nil, err
	}
	b.systemNamespaces()
	b.serviceCIDR()
	b.service("default", "kubernetes")
	b.endpoints("default", "kubernetes")
	b.node("cp1")
	b.kubeadmConfigMaps()
	b.rootCAConfigMaps("default", "kube-system", "kube-public", "kube-node-lease")
	b.bootstrapToken()
	b.systemServiceAccounts()
	b.staticPods()
	b.coreDNS()
	b.nodeLocalDNS()
	b.kubeProxy("cp1", "kube-proxy-x7k2p")
	b.flannel()
	b.nodeLease("cp1")
	b.controllerManagerLease()
	for _, n := range []string{"worker-vm1", "worker-hw1", "ext-fake1"} {
		b.node(n)
	}
	b.kubeProxy("worker-hw1", "kube-proxy-m4r8t")
	b.nodeLease("worker-vm1")
	b.nodeLease("worker-hw1")
	b.calico()
	b.apiService()
	b.metricsServer()
	b.ingressNginx()
	b.demo()
	b.events()
	b.serviceRanges()
	b.lastWrittenBy124(UntouchedSince124...)
	if b.err != nil {
		return nil, b.err
	}
	return b.entries, nil
}

// builder collects entries; the first error stops it.
type builder struct {
	enc     *encoder
	ca      []byte
	entries []Entry
	err     error
}

func newBuilder() (*builder, error) {
	ca, err := clusterCA()
	if err != nil {
		return nil, err
	}
	return &builder{enc: newEncoder(), ca: ca}, nil
}

// add stores a built-in object as protobuf.
func (b *builder) add(key string, obj runtime.Object) {
	e := b.encode(key, obj)
	if b.err == nil {
		b.entries = append(b.entries, e)
	}
}

// encode returns the protobuf entry of a built-in object without storing it, recording any error.
func (b *builder) encode(key string, obj runtime.Object) Entry {
	if b.err != nil {
		return Entry{}
	}
	e, err := b.enc.protobuf(key, obj)
	if err != nil {
		b.err = err
	}
	return e
}

// addEntry stores an already encoded entry, or records the error.
func (b *builder) addEntry(e Entry, err error) {
	if b.err != nil {
		return
	}
	if err != nil {
		b.err = err
		return
	}
	b.entries = append(b.entries, e)
}

// fail records an error found while building.
func (b *builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("sample: "+format, args...)
	}
}

// typeMeta returns the TypeMeta the protobuf envelope takes its apiVersion and kind from.
func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// objectMeta returns metadata as kube-apiserver stores it: name, namespace, a UID, the creation time
// (resourceVersion and selfLink are never stored).
func objectMeta(kind, namespace, name string, created time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         namespace,
		UID:               uid(kind, namespace, name),
		CreationTimestamp: at(created),
	}
}

// managed returns one managedFields entry.
func managed(manager string, op metav1.ManagedFieldsOperationType, apiVersion string, t time.Duration, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager:     manager,
		Operation:   op,
		APIVersion:  apiVersion,
		Time:        new(at(t)),
		FieldsType:  "FieldsV1",
		FieldsV1:    &metav1.FieldsV1{Raw: []byte(fields)},
		Subresource: subresource,
	}
}

// Creation times of the phases, as offsets from kubeadm init.
const (
	tInit    = 0
	tAddons  = 40 * time.Second
	tFlannel = 5 * time.Minute
	tJoin    = 20 * time.Minute
	tApps    = 2 * time.Hour
	tEvents  = 26 * time.Hour
	tHistory = 3 * 24 * time.Hour
)

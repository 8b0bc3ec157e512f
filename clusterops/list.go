package clusterops

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
)

// PageSize is how many objects one list request asks for (limit and
// continue, as kubectl's --chunk-size): at 5,000 nodes the Pods are about
// 150,000 objects, which one response would hold in memory at once, on
// both sides, while every other client of a restored cluster relists too.
const PageSize = 500

// ClientQPS and ClientBurst are the request rate a client of cluster
// restart and check keeps to (client-go's rate limiter; its defaults are 5
// and 10): fast enough for the checks' 300 pages of Pods at 5,000 nodes in
// about 15 s, and a fraction of what one kubelet's relist costs an
// apiserver that every kubelet and agent is relisting from after the
// restore.
const (
	ClientQPS   = 20
	ClientBurst = 40
)

// TuneClient sets rc to speak as cluster restart and check do: protobuf
// both ways, as kube-controller-manager and the kubelets speak to the
// apiserver (smaller and cheaper to decode than JSON on both sides; JSON
// stays accepted), at ClientQPS.
func TuneClient(rc *rest.Config) {
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	rc.QPS, rc.Burst = ClientQPS, ClientBurst
}

// pageBuffer is how many pages are fetched ahead of the one being read.
const pageBuffer = 1

// lister is a typed client's List (Pods(ns).List, Nodes().List, ...).
type lister func(context.Context, metav1.ListOptions) (runtime.Object, error)

// eachItem calls fn on every object list returns, a page at a time, so
// that no more than two pages are held at once. An item of another type
// than T is an error.
func eachItem[T runtime.Object](ctx context.Context, list lister, opts metav1.ListOptions, fn func(T)) error {
	p := pager.New(pager.ListPageFunc(list))
	p.PageSize, p.PageBufferSize = PageSize, pageBuffer
	return p.EachListItem(ctx, opts, func(o runtime.Object) error {
		it, ok := o.(T)
		if !ok {
			return fmt.Errorf("a list gave a %T, not a %T", o, it)
		}
		fn(it)
		return nil
	})
}

func podsIn(c kubernetes.Interface, ns string) lister {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(ns).List(ctx, o)
	}
}

func nodesOf(c kubernetes.Interface) lister {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, o)
	}
}

func eventsIn(c kubernetes.Interface, ns string) lister {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Events(ns).List(ctx, o)
	}
}

// eachPod, eachNode and eachEvent are eachItem for the lists the checks
// and the restart read.
func eachPod(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions, fn func(*corev1.Pod)) error {
	return eachItem(ctx, podsIn(c, ns), opts, fn)
}

func eachNode(ctx context.Context, c kubernetes.Interface, fn func(*corev1.Node)) error {
	return eachItem(ctx, nodesOf(c), metav1.ListOptions{}, fn)
}

func eachEvent(ctx context.Context, c kubernetes.Interface, opts metav1.ListOptions, fn func(*corev1.Event)) error {
	return eachItem(ctx, eventsIn(c, ""), opts, fn)
}

package sample

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// OpType is the kind of a history operation.
type OpType int

const (
	// OpPut writes Entry.Value to Entry.Key.
	OpPut OpType = iota + 1
	// OpDelete deletes Entry.Key (a tombstone in the snapshot).
	OpDelete
	// OpCompact is one step of kube-apiserver's compactor: a transaction that puts the previously
	// recorded revision into CompactRevKey, then, from the second step on, compacts etcd at that
	// revision. See Write.
	OpCompact
)

func (t OpType) String() string {
	switch t {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpCompact:
		return "compact"
	}
	return "unknown"
}

// CompactRevKey is the key kube-apiserver's compactor coordinates through (outside /registry). Its
// value is the decimal revision of the last compaction ("0" before the first); its version counts the
// compaction rounds.
const CompactRevKey = "compact_rev_key"

// Op is one step of the sample's history after Objects.
type Op struct {
	Type OpType
	// Entry is the key (and, for OpPut, the value) the step writes; empty for OpCompact.
	Entry
	// Why says what the step stands for in the cluster's life.
	Why string
}

// History returns what happened after Objects, in order: a ConfigMap updated three times (the first
// two versions carry a password), a Node Lease renewed twice, a Service created and deleted (with its
// IPAddress), a Pod created, gracefully deleted and removed, and two rounds of the apiserver's
// compactor, so that the snapshot holds compacted history, live history and tombstones.
func History() ([]Op, error) {
	b, err := newBuilder()
	if err != nil {
		return nil, err
	}
	var ops []Op
	put := func(why string, entries ...Entry) {
		for _, e := range entries {
			ops = append(ops, Op{Type: OpPut, Entry: e, Why: why})
		}
	}
	del := func(why string, keys ...string) {
		for _, k := range keys {
			ops = append(ops, Op{Type: OpDelete, Entry: Entry{Key: k}, Why: why})
		}
	}
	compact := func(why string) { ops = append(ops, Op{Type: OpCompact, Why: why}) }
	appSettingsKey := "/registry/configmaps/demo/app-settings"
	appSettingsAt := func(n int) Entry {
		return b.encode(appSettingsKey, configMapObject("demo", "app-settings", tApps, appSettings(n), map[string]string{"app": "web"}))
	}
	leaseAt := func(renewed time.Duration) Entry {
		return b.encode(NodeLeaseKey("cp1"), nodeLeaseObject("cp1", renewed))
	}
	debugPod := pod{
		namespace: "demo", name: "debug-shell", node: "worker-hw1", ip: "10.244.8.4", created: tHistory + 10*time.Minute,
		labels: map[string]string{"run": "debug-shell"}, sa: "default",
		containers: []corev1.Container{container("debug-shell", "docker.io/library/busybox:1.37")},
	}
	podAt := func(p pod) Entry {
		return b.encode(p.key(), podObject(p))
	}
	temp := TempService()

	put("demo/app-settings: first update (still with the password)", appSettingsAt(1))
	compact("apiserver compactor, first round: records revision 0, compacts nothing")
	put("kubelet renews its node Lease", leaseAt(tHistory))
	put("create Service demo/temp-debug: IPAddress allocated, then the Service", b.serviceEntries(temp.Namespace, temp.Name)...)
	put("run Pod demo/debug-shell", podAt(debugPod))
	put("demo/app-settings: second update removes the password", appSettingsAt(2))
	compact("apiserver compactor, second round: compacts at the revision recorded in the first")
	deleting := debugPod
	deleting.deletedAt = tHistory + 40*time.Minute
	put("graceful deletion of demo/debug-shell sets deletionTimestamp", podAt(deleting))
	del("kubelet confirms: Pod demo/debug-shell removed", debugPod.key())
	del("delete Service demo/temp-debug, then release its IPAddress", temp.Key(), IPAddressKey(temp.ClusterIPs[0]))
	put("demo/app-settings: third update", appSettingsAt(3))
	put("kubelet renews its node Lease", leaseAt(tHistory+time.Hour))

	if b.err != nil {
		return nil, b.err
	}
	return ops, nil
}

// objectsAndHistory returns the sample's whole life: Objects, then History.
func objectsAndHistory() ([]Entry, []Op, error) {
	objects, err := Objects()
	if err != nil {
		return nil, nil, err
	}
	history, err := History()
	return objects, history, err
}

// Live returns the expected live state after Objects and History, sorted by key, without
// CompactRevKey (its value depends on the revisions the server assigned; Write returns it).
func Live() ([]Entry, error) {
	objects, history, err := objectsAndHistory()
	if err != nil {
		return nil, err
	}
	live := map[string]Entry{}
	for _, e := range objects {
		live[e.Key] = e
	}
	for _, op := range history {
		switch op.Type {
		case OpPut:
			live[op.Key] = op.Entry
		case OpDelete:
			delete(live, op.Key)
		}
	}
	out := make([]Entry, 0, len(live))
	for _, e := range live {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

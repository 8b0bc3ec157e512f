package transform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func sampleObjects(n int) []ObjectChange {
	var objs []ObjectChange
	for i := range n {
		o := ObjectChange{Key: fmt.Sprintf("/registry/services/specs/ns-%d/svc-%d", i%7, i), Action: "replace", Rules: []string{"service-cidr"},
			Changes: []Change{{Field: "spec.clusterIPs", Old: fmt.Sprintf("192.168.%d.%d", i/256%256, i%256), New: fmt.Sprintf("172.24.%d.%d", i/256%256, i%256)}}}
		switch i % 5 {
		case 1:
			o.Action, o.Rules, o.Changes = "delete", []string{"pod-cidr", "service-cidr"}, nil
		case 2:
			o.Action, o.Changes = "create", []Change{{Field: "renamed from", New: o.Key}, {Field: "x", Old: "é\x00", New: ""}}
		}
		objs = append(objs, o)
	}
	return objs
}

// TestObjectChangesSpill: the list reads back what was added, in order,
// whether it stayed in memory, spilled to an unlinked file, or found no
// directory to spill in; it marshals to the JSON a slice would.
func TestObjectChangesSpill(t *testing.T) {
	want := sampleObjects(5000)
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		dir     func(t *testing.T) string
		spillAt int
		spills  bool
	}{
		{"memory", func(*testing.T) string { return "" }, 1 << 10, false},
		{"below the threshold", func(t *testing.T) string { return t.TempDir() }, 1 << 30, false},
		{"spilled", func(t *testing.T) string { return t.TempDir() }, 4 << 10, true},
		{"spilled at every object", func(t *testing.T) string { return t.TempDir() }, 1, true},
		{"no directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing") }, 4 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			beside := ""
			if dir != "" {
				beside = filepath.Join(dir, "out.db")
			}
			l := &ObjectChanges{beside: beside, spillAt: tc.spillAt}
			for _, o := range want {
				if err := l.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			if (l.f != nil) != tc.spills {
				t.Errorf("spill file %v, want one: %v", l.f != nil, tc.spills)
			}
			if l.f != nil {
				if len(l.mem) >= tc.spillAt {
					t.Errorf("%d bytes left in memory, threshold %d", len(l.mem), tc.spillAt)
				}
				ents, _ := os.ReadDir(dir)
				if len(ents) != 0 {
					t.Errorf("the spill file is not unlinked: %v", ents)
				}
				if fi, err := l.f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("spill file mode %v (%v), want 0600", fi.Mode(), err)
				}
			}
			if l.Len() != len(want) {
				t.Errorf("Len %d, want %d", l.Len(), len(want))
			}
			got, err := l.Slice()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("read back %d objects, differing from the %d added", len(got), len(want))
			}
			i := 0
			for o := range l.All() {
				if !reflect.DeepEqual(o, want[i]) {
					t.Fatalf("All's object %d: %+v, want %+v", i, o, want[i])
				}
				i++
				if i == 10 {
					break
				}
			}
			js, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			if string(js) != string(wantJSON) {
				t.Errorf("JSON differs from a slice's")
			}
			var back ObjectChanges
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			if got, _ := back.Slice(); !reflect.DeepEqual(got, want) {
				t.Error("JSON does not read back")
			}
			if err := l.Close(); err != nil {
				t.Error(err)
			}
			if l.Len() != 0 {
				t.Error("a closed list is not empty")
			}
		})
	}
}

// TestObjectChangesEmpty: no objects marshal to [] as an empty list, a nil
// list to null, as the slice did.
func TestObjectChangesEmpty(t *testing.T) {
	b, err := json.Marshal(struct {
		A *ObjectChanges `json:"a"`
		B *ObjectChanges `json:"b"`
	}{A: &ObjectChanges{}})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"a":[],"b":null}` {
		t.Errorf("got %s", b)
	}
	var nilList *ObjectChanges
	if nilList.Len() != 0 || nilList.Each(func(ObjectChange) error { t.Error("called"); return nil }) != nil {
		t.Error("a nil list is not empty")
	}
}

package calicocrds

import (
	"strings"
	"testing"
)

// TestFiles: the four IPAM CRDs, in name order, each naming its kind.
func TestFiles(t *testing.T) {
	names, data, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 4 || len(data) != 4 {
		t.Fatalf("Files() = %v, want the four IPAM CRDs", names)
	}
	for i, n := range names {
		if !strings.Contains(string(data[i]), "kind: CustomResourceDefinition") {
			t.Errorf("%s is not a CustomResourceDefinition", n)
		}
	}
}

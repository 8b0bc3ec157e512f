// Command apiserver-gen writes encrypted values with kube-apiserver's own transformers, for
// encryption/testdata/apiserver-v0.36.3.json. It is not part of the snapshift module (testdata is
// ignored by the go tool); run it from a scratch module that requires k8s.io/apiserver v0.36.3:
//
//	go run . a.yaml 'aescbc-key2||secrets|/registry/secrets/default/tok' ...
//
// Each argument is name|group|resource|etcd key; group and resource select the transformer.
//
// With "read" first it is the other way round, for encryption/testdata/derived-v0.36.3.json:
// kube-apiserver's transformers read values snapshift wrote. The input (stdin) is that file's
// fixtures, written by `go test ./encryption -run TestDerivedReadByApiserver -derived-input`; each
// stored value is read with TransformFromStorage under its etcd key, must give its plaintext
// (else the command panics), and the file is written to stdout with "readBy" set:
//
//	go run . read a=a.yaml b=b.yaml < input.json > derived-v0.36.3.json

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
)

type fixture struct {
	Name      string `json:"name"`
	Resource  string `json:"resource"`
	EtcdKey   string `json:"etcdKey"`
	Plaintext []byte `json:"plaintext"`
	Stored    []byte `json:"stored"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "read" {
		read(context.Background(), os.Args[2:])
		return
	}
	ctx := context.Background()
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, os.Args[1], false, "test")
	if err != nil {
		panic(err)
	}
	pt := []byte("k8s\x00\n\x0c\n\x02v1\x12\x06Secret\x12\x4a\n\x2f\n\x03tok\x12\x00\x1a\x07default\"\x00*$0b6c7e5b-1a2b-4c3d-8e9f-0a1b2c3d4e5f2\x00\x12\x17\n\x05token\x12\x0es3cr3t-v4lue!!\x1a\x06Opaque\x1a\x00\"\x00")
	var out []fixture
	type cs struct{ name, group, res, key string }
	var cases []cs
	for _, a := range os.Args[2:] {
		p := strings.SplitN(a, "|", 4)
		cases = append(cases, cs{p[0], p[1], p[2], p[3]})
	}
	for _, c := range cases {
		tr := cfg.Transformers[schema.GroupResource{Group: c.group, Resource: c.res}]
		if tr == nil {
			panic(c.res)
		}
		stored, err := tr.TransformToStorage(ctx, pt, value.DefaultContext(c.key))
		if err != nil {
			panic(err)
		}
		back, _, err := tr.TransformFromStorage(ctx, stored, value.DefaultContext(c.key))
		if err != nil || string(back) != string(pt) {
			panic(fmt.Sprint("roundtrip ", err))
		}
		_, _, err = tr.TransformFromStorage(ctx, stored, value.DefaultContext(c.key+"-moved"))
		fmt.Fprintf(os.Stderr, "%s moved-key read err: %v\n", c.name, err)
		out = append(out, fixture{c.name, c.res, c.key, pt, stored})
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	os.Stdout.Write(append(b, '\n'))
}

// derived is one value snapshift wrote, read back by kube-apiserver.
type derived struct {
	Name      string `json:"name"`
	Config    string `json:"config"`
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	EtcdKey   string `json:"etcdKey"`
	Plaintext []byte `json:"plaintext"`
	Stored    []byte `json:"stored"`
}

type derivedFile struct {
	Comment  string    `json:"comment"`
	ReadBy   string    `json:"readBy"`
	Fixtures []derived `json:"fixtures"`
}

func read(ctx context.Context, configs []string) {
	trs := map[string]map[schema.GroupResource]value.Transformer{}
	for _, a := range configs {
		name, path, _ := strings.Cut(a, "=")
		cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "test")
		if err != nil {
			panic(err)
		}
		trs[name] = cfg.Transformers
	}
	var f derivedFile
	if err := json.NewDecoder(os.Stdin).Decode(&f); err != nil {
		panic(err)
	}
	for _, d := range f.Fixtures {
		m := trs[d.Config]
		tr := m[schema.GroupResource{Group: d.Group, Resource: d.Resource}]
		if tr == nil { // a wildcard entry, as the apiserver resolves one
			tr = m[schema.GroupResource{Group: d.Group, Resource: "*"}]
		}
		if tr == nil {
			panic(d.Config + " " + d.Resource)
		}
		got, _, err := tr.TransformFromStorage(ctx, d.Stored, value.DefaultContext(d.EtcdKey))
		if err != nil || string(got) != string(d.Plaintext) {
			panic(fmt.Sprintf("%s: kube-apiserver read %q, %v", d.Name, got, err))
		}
	}
	f.ReadBy = "k8s.io/apiserver v0.36.3 TransformFromStorage: every stored value read back to its plaintext"
	b, _ := json.MarshalIndent(f, "", "  ")
	os.Stdout.Write(append(b, '\n'))
}

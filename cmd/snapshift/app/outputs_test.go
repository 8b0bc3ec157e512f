package app

import (
	"encoding"
	"encoding/json"
	"fmt"
	"github.com/snapshift/snapshift/internal/testfile"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/transform"
)

// outputPath is the reference of the documents, generated from the types
// below by TestOutputSchemas.
const outputPath = "../../../docs/OUTPUT.md"

// outputDoc is one Go type of a -o json|yaml document, the kinds it is
// printed as and the commands that print each.
type outputDoc struct {
	kinds    []string
	doc      any
	commands []string
}

func one(kind string, doc any, commands string) outputDoc {
	return outputDoc{[]string{kind}, doc, []string{commands}}
}

// outputDocs are every document snapshift prints under -o json|yaml, in
// the order docs/OUTPUT.md lists them. A new kind (newTypeMeta) not listed
// here fails TestOutputSchemas.
var outputDocs = []outputDoc{
	one("InspectReport", inspectDocument{}, "`inspect`"),
	one("TransformReport", transformDocument{}, "`plan`, `transform`, `restore` with rule flags"),
	one("VerifyReport", verifyJSON{}, "`verify` (exit 5 when a check failed: the document says which)"),
	one("EntryList", entryList{}, "`ls`"),
	one("Entry", entryDocument{}, "`get --show-entry`, and `get -o json` of a value that is no object (`get` of an object prints the object itself, with its own apiVersion and kind)"),
	one("RestoreResult", restoreDocument{}, "`restore` without rule flags"),
	one("CertsResultList", certsResultList{}, "`certs`"),
	one("ManifestsResult", manifestsDocument{}, "`manifests`"),
	one("BundleReport", rebuild.Report{}, "`rebuild` (also with `--dry-run`); the bundle's `report.json` is the same document"),
	{[]string{"NodeApplyResult", "NodeRollbackResult", "NodeConfirmResult"}, nodeDocument{},
		[]string{"`node apply`", "`node rollback`, `node rollback-if-unconfirmed`", "`node confirm`"}},
	one("ClusterRestartResult", restartDocument{}, "`cluster restart`"),
	one("ClusterCheckResult", checkDocument{}, "`cluster check`"),
	one("CleanResult", cleanDocument{}, "`clean`"),
	one("RuleList", ruleList{}, "`rules`"),
	one("VersionInfo", versionDocument{}, "`version`"),
	one("Error", errorDocument{}, "any command under `-o json|yaml` that fails before it prints its own document (stdout holds this one instead)"),
	one("Progress", progressLine{}, "every command that reports progress, on stderr under `-o json|yaml`: one compact JSON document per line, one line per phase that ended"),
}

// documentedKinds are the kinds outputDocs lists.
func documentedKinds() map[string]bool {
	m := map[string]bool{}
	for _, d := range outputDocs {
		for _, k := range d.kinds {
			m[k] = true
		}
	}
	return m
}

// TestOutputSchemas: docs/OUTPUT.md is what the document types generate
// (make docs rewrites it), every kind the code makes is listed there, and
// every document opens with apiVersion and kind.
func TestOutputSchemas(t *testing.T) {
	want, err := outputSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		if err := os.WriteFile(outputPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if got, err := os.ReadFile(outputPath); err != nil || string(got) != want {
		t.Errorf("docs/OUTPUT.md is not what the document types generate (%v): run make docs "+
			"(go test ./cmd/snapshift/app -run TestOutputSchemas -update-docs)", err)
	}

	// Every kind the sources make is documented.
	kinds := documentedKinds()
	files, _ := filepath.Glob("*.go")
	made := regexp.MustCompile(`newTypeMeta\("(\w+)"\)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range made.FindAllStringSubmatch(string(src), -1) {
			if !kinds[m[1]] {
				t.Errorf("%s makes kind %s, which docs/OUTPUT.md does not list: add it to outputDocs", f, m[1])
			}
		}
	}
	for op, k := range nodeKinds {
		if !kinds[k] {
			t.Errorf("node %s prints kind %s, which docs/OUTPUT.md does not list", op, k)
		}
	}
	// The fields as the encoder sees them: apiVersion and kind first, and
	// no field lost to a name two embedded types share.
	for _, d := range outputDocs {
		fields := jsonFields(reflect.TypeOf(d.doc))
		if len(fields) < 2 || fields[0].name != "apiVersion" || fields[1].name != "kind" {
			t.Errorf("%s (%T) does not open with apiVersion and kind", d.kinds[0], d.doc)
		}
	}
}

// TestDocumentKinds runs the reporting commands with -o json on the
// sample and checks each prints one document with apiVersion
// snapshift.io/v1alpha1 and the kind docs/OUTPUT.md lists for it.
func TestDocumentKinds(t *testing.T) {
	in := copySample(t)
	dir := t.TempDir()
	sample, err := filepath.Abs(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rebuild.yaml")
	body := "apiVersion: snapshift.io/v1alpha1\nkind: RebuildConfiguration\nsnapshot: " + sample + "\noutput: " + filepath.Join(dir, "bundle") + `
networking: {serviceSubnet: 172.24.0.0/16, podSubnet: 10.55.0.0/16}
etcd:
  members:
  - {name: cp1, peerURL: "https://10.0.0.10:2380", clientURL: "https://10.0.0.10:2379"}
manifests: {kubernetesVersion: v1.36.3}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	peer := "http://127.0.0.1:2380"
	kinds := documentedKinds()
	for _, c := range []struct {
		kind string
		args []string
	}{
		{"InspectReport", []string{"inspect", in}},
		{"TransformReport", []string{"plan", in, "--service-cidr", "172.24.0.0/16"}},
		{"TransformReport", []string{"transform", in, "--out", filepath.Join(dir, "out.db")}},
		{"VerifyReport", []string{"verify", in}},
		{"EntryList", []string{"ls", in, "svc"}},
		{"Entry", []string{"get", in, "svc/kube-system/kube-dns", "--show-entry"}},
		{"RestoreResult", []string{"restore", in, "--name", "m1", "--data-dir", filepath.Join(dir, "m1"), "--initial-cluster", "m1=" + peer, "--initial-advertise-peer-urls", peer}},
		{"BundleReport", []string{"rebuild", "--config", cfg, "--dry-run"}},
		{"CleanResult", []string{"clean", dir, "--dry-run"}},
		{"RuleList", []string{"rules"}},
		{"VersionInfo", []string{"version"}},
	} {
		cmdline := strings.Join(c.args, " ") + " -o json"
		r := run(t, append(c.args, "-o", "json")...)
		if r.code != ExitOK {
			t.Errorf("%s: exit %d: %s", cmdline, r.code, r.stderr)
			continue
		}
		var doc struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		decodeStrict(t, cmdline, r.stdout, new(map[string]any))
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.APIVersion != "snapshift.io/v1alpha1" || doc.Kind != c.kind || !kinds[doc.Kind] {
			t.Errorf("%s: apiVersion %q, kind %q (%v); want snapshift.io/v1alpha1 %s, a kind docs/OUTPUT.md lists", cmdline, doc.APIVersion, doc.Kind, err, c.kind)
		}
		// The progress stream on stderr: one Progress document a line.
		for _, l := range r.stderrLines() {
			var p progressLine
			if err := json.Unmarshal([]byte(l), &p); err != nil || p.APIVersion != "snapshift.io/v1alpha1" || p.Kind != "Progress" || p.Phase == "" {
				t.Errorf("%s: stderr line %q is no Progress document (%v)", cmdline, l, err)
			}
		}
	}
}

// schemaField is one key of a JSON object as encoding/json writes it.
type schemaField struct {
	name      string
	typ       reflect.Type
	omitempty bool
	owner     reflect.Type // the struct that declares the field (its doc comment is there)
	goName    string
}

// jsonFields are t's keys in encoding/json's order and by its rules:
// embedded structs without a name inlined, the shallowest of two fields of
// one name kept (of two at one depth, the tagged one, else neither).
func jsonFields(t reflect.Type) []schemaField {
	type cand struct {
		schemaField
		depth  int
		tagged bool
	}
	var all []cand
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			ft := f.Type
			if f.Anonymous && name == "" {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					walk(et, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			tagged := name != ""
			if name == "" {
				name = f.Name
			}
			all = append(all, cand{schemaField{name, ft, slices.Contains(strings.Split(opts, ","), "omitempty"), t, f.Name}, depth, tagged})
		}
	}
	walk(t, 0)
	var out []schemaField
	for i, c := range all {
		keep := true
		for j, o := range all {
			if o.name != c.name || i == j {
				continue
			}
			if o.depth < c.depth || (o.depth == c.depth && (o.tagged || !c.tagged)) {
				keep = false
			}
		}
		if keep {
			out = append(out, c.schemaField)
		}
	}
	return out
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemaOverrides are the types with a MarshalJSON of their own, as what
// they write.
var schemaOverrides = map[reflect.Type]reflect.Type{
	reflect.TypeFor[transform.ObjectChanges](): reflect.TypeFor[[]transform.ObjectChange](),
}

// schemaGen renders the documents' tables, and one table per struct type
// they hold, each once.
type schemaGen struct {
	docs    *goDocs
	queued  map[reflect.Type]bool
	pending []reflect.Type
}

// typeName is how a table names a struct type: package.Type, or Type
// alone for this package's.
func typeName(t reflect.Type) string {
	if t.PkgPath() == reflect.TypeFor[typeMeta]().PkgPath() {
		return t.Name()
	}
	return filepath.Base(t.PkgPath()) + "." + t.Name()
}

// jsonType is t as the document has it: string, integer, [] of, map of, a
// link to a struct's table.
func (g *schemaGen) jsonType(t reflect.Type) string {
	if o, ok := schemaOverrides[t]; ok {
		return g.jsonType(o)
	}
	if t.Kind() == reflect.Pointer {
		if o, ok := schemaOverrides[t.Elem()]; ok {
			return g.jsonType(o)
		}
	}
	switch t {
	case reflect.TypeFor[time.Time]():
		return "string (RFC 3339 time)"
	case reflect.TypeFor[time.Duration]():
		return "integer (nanoseconds)"
	}
	if t.Kind() != reflect.Pointer && (t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) && !t.Implements(jsonMarshaler) {
		return "string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.jsonType(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Interface:
		return "any"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)"
		}
		return "[] " + g.jsonType(t.Elem())
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return "object"
		}
		return "map of " + g.jsonType(t.Elem())
	case reflect.Struct:
		if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
			return "object (" + typeName(t) + "'s own JSON: " + g.docs.typeDoc(t) + ")"
		}
		if t.Name() == "" {
			return "object"
		}
		if !g.queued[t] {
			g.queued[t] = true
			g.pending = append(g.pending, t)
		}
		return fmt.Sprintf("[%s](#%s)", typeName(t), testfile.Anchor("type "+typeName(t)))
	}
	return t.String()
}

// table is t's keys, one row each; a document's (kinds given) open
// with apiVersion and kind.
func (g *schemaGen) table(b *strings.Builder, t reflect.Type, kinds []string) {
	b.WriteString("| key | type | omitempty | description |\n|---|---|---|---|\n")
	for _, f := range jsonFields(t) {
		omit := ""
		if f.omitempty {
			omit = "yes"
		}
		desc := g.docs.fieldDoc(f.owner, f.goName)
		switch {
		case kinds == nil:
		case f.name == "apiVersion":
			desc = "`snapshift.io/v1alpha1`"
		case f.name == "kind":
			desc = "`" + strings.Join(kinds, "`, `") + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f.name, cell(g.jsonType(f.typ)), omit, cell(desc))
	}
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// outputSchemas renders docs/OUTPUT.md.
func outputSchemas() (string, error) {
	docs, err := loadGoDocs("../../..")
	if err != nil {
		return "", err
	}
	g := &schemaGen{docs: docs, queued: map[reflect.Type]bool{}}
	var b strings.Builder
	b.WriteString(`# Output documents

<!-- generated from the Go types by TestOutputSchemas (make docs); do not edit -->

With ` + "`--output json`" + ` (or ` + "`-o yaml`" + `, the same document in YAML) every command prints one
document on stdout, and it opens with ` + "`apiVersion: snapshift.io/v1alpha1`" + ` and a ` + "`kind`" + `
that says which of the documents below it is. A script checks both before it reads on: a document
of another apiVersion is a format it does not know. The one exception is ` + "`get`" + ` of a
Kubernetes object, which prints the object itself, as ` + "`kubectl get -o json`" + ` does, with the
object's own apiVersion and kind.

A key marked omitempty is left out when it is empty (false, 0, "", no items). The types a
document holds are listed after the documents, each once.

| kind | printed by |
|---|---|
`)
	for _, d := range outputDocs {
		for i, k := range d.kinds {
			fmt.Fprintf(&b, "| [%s](#%s) | %s |\n", k, testfile.Anchor(strings.Join(d.kinds, " ")), cell(d.commands[i]))
		}
	}
	for _, d := range outputDocs {
		t := reflect.TypeOf(d.doc)
		fmt.Fprintf(&b, "\n## %s\n\n", strings.Join(d.kinds, ", "))
		if len(d.kinds) == 1 {
			fmt.Fprintf(&b, "Printed by %s.", d.commands[0])
		} else {
			var by []string
			for i, k := range d.kinds {
				by = append(by, "`"+k+"` by "+d.commands[i])
			}
			fmt.Fprintf(&b, "Printed as %s.", strings.Join(by, "; "))
		}
		if doc := docs.typeDoc(t); doc != "" && t.PkgPath() != reflect.TypeFor[typeMeta]().PkgPath() {
			fmt.Fprintf(&b, " %s", doc)
		}
		b.WriteString("\n\n")
		g.table(&b, t, d.kinds)
	}
	b.WriteString("\n## Types\n")
	for len(g.pending) > 0 {
		t := g.pending[0]
		g.pending = g.pending[1:]
		fmt.Fprintf(&b, "\n### type %s\n\n", typeName(t))
		if doc := docs.typeDoc(t); doc != "" {
			fmt.Fprintf(&b, "%s\n\n", doc)
		}
		g.table(&b, t, nil)
	}
	return b.String(), nil
}

// goDocs are the doc comments of the module's struct types and their
// fields, read from the source.
type goDocs struct {
	root, module string
	pkgs         map[string]map[string]*typeComments // package path -> type name
}

type typeComments struct {
	doc    string
	fields map[string]string
}

func loadGoDocs(root string) (*goDocs, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(mod)
	if m == nil {
		return nil, fmt.Errorf("go.mod names no module")
	}
	return &goDocs{root: root, module: string(m[1]), pkgs: map[string]map[string]*typeComments{}}, nil
}

// comments are the struct types of package path and their comments.
func (d *goDocs) comments(path string) map[string]*typeComments {
	if c, ok := d.pkgs[path]; ok {
		return c
	}
	c := map[string]*typeComments{}
	d.pkgs[path] = c
	rel, ok := strings.CutPrefix(path, d.module)
	if !ok {
		return c // outside the module: no comments
	}
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(d.root, rel, "*.go"))
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			continue
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				tc := &typeComments{fields: map[string]string{}}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				tc.doc = oneParagraph(doc)
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, fl := range st.Fields.List {
						text := oneParagraph(fl.Doc)
						if text == "" {
							text = oneParagraph(fl.Comment)
						}
						for _, n := range fl.Names {
							tc.fields[n.Name] = text
						}
						if len(fl.Names) == 0 { // embedded: named by its type
							if id := embeddedName(fl.Type); id != "" {
								tc.fields[id] = text
							}
						}
					}
				}
				c[ts.Name.Name] = tc
			}
		}
	}
	return c
}

func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// oneParagraph is a comment as one line.
func oneParagraph(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	return strings.Join(strings.Fields(cg.Text()), " ")
}

func (d *goDocs) typeDoc(t reflect.Type) string {
	if tc := d.comments(t.PkgPath())[t.Name()]; tc != nil {
		return tc.doc
	}
	return ""
}

func (d *goDocs) fieldDoc(owner reflect.Type, field string) string {
	if tc := d.comments(owner.PkgPath())[owner.Name()]; tc != nil {
		return tc.fields[field]
	}
	return ""
}

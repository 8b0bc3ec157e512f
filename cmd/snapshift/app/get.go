package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/inspect"
	"github.com/snapshift/snapshift/wellknown"
)

// getOptions are get's options. Like kubectl's, -o yaml|json prints the
// object itself, so it pipes into `kubectl apply -f -` or jq;
// --show-entry wraps it with the etcd entry's metadata instead.
type getOptions struct {
	common
	path, key   string
	arg         string // KEY as given
	keyErr      error  // KEY is no RESOURCE/… either: an error unless it is a raw key
	showSecrets bool
	showEntry   bool
	// showManaged keeps metadata.managedFields, which kubectl get -o
	// yaml|json leaves out unless --show-managed-fields.
	showManaged bool
}

func (o *getOptions) setup(c *cli.Context) error {
	o.streams(c)
	a, err := args(c, 2, 2, "SNAPSHOT and KEY")
	if err != nil {
		return err
	}
	o.path = a[0]
	o.arg = a[1]
	o.key, o.keyErr = keyOf(a[1]) // a raw key: compact_rev_key, if the snapshot has it
	return o.unpack(&o.path)
}

func (o *getOptions) Validate() error { return o.validateFormat() }

func (o *getOptions) Run(ctx context.Context) error {
	enc, err := o.encryption()
	if err != nil {
		return err
	}
	r, err := inspect.Get(ctx, inspect.GetConfig{Path: o.path, Key: o.key, SkipHashCheck: o.skipHash, ShowSecrets: o.showSecrets, Encryption: enc})
	if o.keyErr != nil && errors.Is(err, inspect.ErrNotFound) {
		return usagef("KEY: %v", o.keyErr)
	}
	if errors.Is(err, inspect.ErrNotFound) {
		return o.notFound(ctx, err)
	}
	if err != nil {
		return err
	}
	if r.Object != nil && !o.showManaged {
		if meta, ok := r.Object["metadata"].(map[string]any); ok {
			delete(meta, "managedFields")
		}
	}
	var doc any = entryDocument{newTypeMeta("Entry"), r}
	switch {
	case o.showEntry:
	case r.Object != nil:
		doc = r.Object
	case r.Text != "" && !o.json():
		_, err := fmt.Fprintln(o.stdout, r.Text)
		return err
	case !o.json():
		// Not an object (encrypted, unknown type): say what it is.
		_, err := fmt.Fprintf(o.stdout, "# %s (revision %d, %d bytes, %s)\n# %s\n", r.Entry.Key, r.Entry.ModRevision, r.Entry.Size, r.Entry.Encoding, r.Note)
		return err
	}
	if o.json() {
		return writeJSON(o.stdout, doc)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = o.stdout.Write(b)
	return err
}

func getCommand() *cli.Command {
	o := &getOptions{}
	return newCommand(o, []cli.Flag{
		o.tmpDirFlag(), o.skipHashFlag(), o.encryptionFlag(), o.outputFlag("yaml", "json"),
		&cli.BoolFlag{Name: "show-secrets", Destination: &o.showSecrets, Usage: "print Secret data in full"},
		&cli.BoolFlag{Name: "show-entry", Destination: &o.showEntry, Usage: "print {entry, object}: the etcd entry's metadata with the object"},
		&cli.BoolFlag{Name: "show-managed-fields", Destination: &o.showManaged, Usage: "keep metadata.managedFields in the object (left out by default, as kubectl get does)"},
	}, cli.Command{
		Name:      "get",
		Usage:     "print one live key's decoded object (Secret data redacted)",
		ArgsUsage: "SNAPSHOT KEY|RESOURCE/[NAMESPACE/]NAME",
		Description: "Decodes the stored value as kube-apiserver wrote it (protobuf or JSON) and prints the object,\n" +
			"as kubectl get -o yaml|json would: it pipes into kubectl apply -f - or jq. --show-entry prints\n" +
			"{entry, object} instead, with the etcd entry's revision, version, size and encoding (a value that\n" +
			"is no object, e.g. one that cannot be decrypted, prints that wrapper in JSON, a comment in YAML).\n" +
			"Secret data is replaced by its length unless --show-secrets is given; metadata.managedFields is left\n" +
			"out unless --show-managed-fields is given, as kubectl does. The object is an etcd key\n" +
			"(starting with /) or RESOURCE/[NAMESPACE/]NAME, the resource as kubectl names it (svc, deploy,\n" +
			"deployments.apps, ippools.crd.projectcalico.org).\n\n" +
			"Example:\n   snapshift get snapshot.db svc/kube-system/kube-dns -o json | jq .spec.clusterIP",
	})
}

// notFound is get's error for a key that is not live: a bad command line
// (exit 2), naming the nearest live key (in the form it was asked for:
// svc/NS/NAME or the raw key) and the ls that lists its neighbours.
func (o *getOptions) notFound(ctx context.Context, err error) error {
	dir, listed := o.key, "/"
	var near []string
	for strings.Count(dir, "/") > 1 {
		dir = dir[:strings.LastIndex(strings.TrimSuffix(dir, "/"), "/")+1]
		entries, lerr := inspect.List(ctx, inspect.ListConfig{Path: o.path, Prefix: dir, SkipHashCheck: o.skipHash})
		if lerr != nil {
			return err
		}
		if len(entries) == 0 {
			continue
		}
		var keys []string
		for _, e := range entries {
			keys = append(keys, e.Key)
		}
		near, listed = closest(o.key, keys), dir
		break // the nearest level that holds keys
	}
	asTyped := func(k string) string {
		if strings.HasPrefix(o.arg, "/") {
			return k
		}
		return wellknown.KubectlName(k)
	}
	for i := range near {
		near[i] = asTyped(near[i])
	}
	return usagef("%s %w%s (snapshift ls %s %s lists what is there)", o.arg, inspect.ErrNotFound, didYouMean(near), o.in.original, asTyped(listed))
}

package encryption

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/internal/strictyaml"
)

// Provider names, as used in the configuration file and in [Info].
const (
	ProviderAESCBC    = "aescbc"
	ProviderAESGCM    = "aesgcm"
	ProviderSecretbox = "secretbox"
	ProviderIdentity  = "identity"
	ProviderKMS       = "kms"
)

// The apiVersion/kind pairs kube-apiserver accepts for the file
// ([apiserver] pkg/apis/apiserver/v1/register.go: the v1 EncryptionConfig kind is kept "due to a
// docs bug").
const (
	configAPIVersion       = "apiserver.config.k8s.io/v1"
	configKind             = "EncryptionConfiguration"
	legacyConfigAPIVersion = "v1"
	legacyConfigKind       = "EncryptionConfig"
)

// The types below mirror apiserver.config.k8s.io/v1 (k8s.io/apiserver
// pkg/apis/apiserver/v1/types_encryption.go); the JSON field names are the same.

type encryptionConfiguration struct {
	APIVersion string                  `json:"apiVersion"`
	Kind       string                  `json:"kind"`
	Resources  []resourceConfiguration `json:"resources"`
}

type resourceConfiguration struct {
	Resources []string                `json:"resources"`
	Providers []providerConfiguration `json:"providers"`
}

type providerConfiguration struct {
	AESGCM    *aesConfiguration       `json:"aesgcm,omitempty"`
	AESCBC    *aesConfiguration       `json:"aescbc,omitempty"`
	Secretbox *secretboxConfiguration `json:"secretbox,omitempty"`
	Identity  *identityConfiguration  `json:"identity,omitempty"`
	KMS       *kmsConfiguration       `json:"kms,omitempty"`
}

type aesConfiguration struct {
	Keys []keyConfiguration `json:"keys"`
}

type secretboxConfiguration struct {
	Keys []keyConfiguration `json:"keys"`
}

type keyConfiguration struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// String and GoString keep the secret out of any formatted output.
func (k keyConfiguration) String() string   { return "Name: " + k.Name + ", Secret: [REDACTED]" }
func (k keyConfiguration) GoString() string { return k.String() }

type identityConfiguration struct{}

type kmsConfiguration struct {
	APIVersion string          `json:"apiVersion"`
	Name       string          `json:"name"`
	CacheSize  *int32          `json:"cachesize,omitempty"`
	Endpoint   string          `json:"endpoint"`
	Timeout    json.RawMessage `json:"timeout,omitempty"` // not needed offline
}

// Config is a parsed and checked EncryptionConfiguration. It holds the ciphers for every
// aescbc, aesgcm and secretbox key it names; it is safe for concurrent use.
type Config struct {
	rules []Rule      // the resources list, without secrets
	keys  []*keyEntry // every (provider, name, secret) once, in configuration order
	kms   []kmsEntry
}

// Rule is one element of the configuration's resources list, without secrets.
type Rule struct {
	Resources []string
	// Providers in configuration order; kube-apiserver writes with the first. aescbc, aesgcm and
	// secretbox contribute one Info per key, in key order; kms contributes its plugin name.
	Providers []Info
}

type kmsEntry struct {
	name, apiVersion string
}

// Load reads and parses the EncryptionConfiguration file at path (what kube-apiserver gets in
// --encryption-provider-config). Errors name the file and the offending field.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("encryption configuration %s does not exist: give the file kube-apiserver's --encryption-provider-config names", path)
	case err != nil && fsutil.IsDir(path):
		return nil, fmt.Errorf("encryption configuration %s is a directory: give the file kube-apiserver's --encryption-provider-config names", path)
	case err != nil:
		return nil, fmt.Errorf("encryption configuration: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("encryption configuration file %q: %w", path, err)
	}
	return c, nil
}

// Parse parses and checks an EncryptionConfiguration (YAML or JSON).
func Parse(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the encryption configuration is empty")
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, errors.New(redactRaw(parseerr.Message(err), data)) // "line 4: not valid YAML: ..."
	}
	var raw encryptionConfiguration
	// A value of the wrong kind, with its path and line (the JSON decoder
	// names neither the list index nor the line, only Go's types).
	if err := strictyaml.CheckTypes(data, &raw, "json"); err != nil {
		return nil, fmt.Errorf("not a valid EncryptionConfiguration: %s", redactRaw(err.Error(), data))
	}
	// Case-sensitive, unknown fields ignored: the same decoding kube-apiserver's codec does.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &raw); err != nil {
		return nil, fmt.Errorf("not a valid EncryptionConfiguration: %s", redactRaw(parseerr.Message(err), data))
	}
	switch {
	case raw.APIVersion == configAPIVersion && raw.Kind == configKind,
		raw.APIVersion == legacyConfigAPIVersion && raw.Kind == legacyConfigKind:
	default:
		return nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %s, kind %s (or the legacy apiVersion %s, kind %s)",
			raw.APIVersion, raw.Kind, configAPIVersion, configKind, legacyConfigAPIVersion, legacyConfigKind)
	}
	return build(&raw)
}

var secretLine = regexp.MustCompile(`(?i)secret["']?\s*:\s*["']?([^"'\s,}\]]+)`)

// redactRaw removes from msg anything that looks like a secret value in the raw file. It is used
// only on messages from the YAML/JSON decoders, which we do not control.
func redactRaw(msg string, data []byte) string {
	for _, m := range secretLine.FindAllSubmatch(data, -1) {
		if s := string(m[1]); len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "[REDACTED]")
		}
	}
	return msg
}

// problems collects validation errors as "<field path>: <message>".
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

func (p problems) err() error {
	switch len(p) {
	case 0:
		return nil
	case 1:
		return errors.New(p[0])
	default:
		return fmt.Errorf("%d problems: %s", len(p), strings.Join(p, "; "))
	}
}

var (
	aesKeySizes       = []int{16, 24, 32}
	secretboxKeySizes = []int{32}
)

// build checks raw the way kube-apiserver does on load (ValidateEncryptionConfiguration, then
// building the transformers) and prepares the ciphers.
func build(raw *encryptionConfiguration) (*Config, error) {
	var errs problems
	if len(raw.Resources) == 0 {
		errs.add("resources", "at least one resources entry is required")
		return nil, errs.err()
	}
	c := &Config{}
	kmsNames := map[string]bool{}
	configured := map[groupResource]string{} // for the masking check, value = YAML spelling
	for i, rc := range raw.Resources {
		base := fmt.Sprintf("resources[%d]", i)
		rpath := base + ".resources"
		ppath := base + ".providers"
		if len(rc.Resources) == 0 {
			errs.add(rpath, "at least one resource is required")
		}
		validateResourceOverlap(rc.Resources, rpath, &errs)
		validateResourceNames(rc.Resources, rpath, &errs)
		for _, r := range rc.Resources {
			gr := parseGroupResource(r)
			for _, mask := range []groupResource{{group: gr.group, resource: "*"}, {group: "*", resource: "*"}} {
				if by, ok := configured[mask]; ok {
					errs.add(rpath, "resource %q is masked by earlier rule %q", r, by)
					break
				}
			}
			if _, ok := configured[gr]; !ok {
				configured[gr] = r
			}
		}
		if len(rc.Providers) == 0 {
			errs.add(ppath, "at least one provider is required")
		}
		rule := Rule{Resources: slices.Clone(rc.Resources)}
		for j, p := range rc.Providers {
			path := fmt.Sprintf("%s[%d]", ppath, j)
			n := 0
			for _, set := range []bool{p.AESGCM != nil, p.AESCBC != nil, p.Secretbox != nil, p.Identity != nil, p.KMS != nil} {
				if set {
					n++
				}
			}
			if n == 0 {
				errs.add(path, "provider does not contain any of the expected providers: kms, aesgcm, aescbc, secretbox, identity")
				continue
			}
			if n > 1 {
				errs.add(path, "more than one provider specified in a single element, should split into different list elements")
				continue
			}
			switch {
			case p.AESGCM != nil:
				rule.Providers = append(rule.Providers, c.addKeys(ProviderAESGCM, p.AESGCM.Keys, path+".aesgcm.keys", aesKeySizes, &errs)...)
			case p.AESCBC != nil:
				rule.Providers = append(rule.Providers, c.addKeys(ProviderAESCBC, p.AESCBC.Keys, path+".aescbc.keys", aesKeySizes, &errs)...)
			case p.Secretbox != nil:
				rule.Providers = append(rule.Providers, c.addKeys(ProviderSecretbox, p.Secretbox.Keys, path+".secretbox.keys", secretboxKeySizes, &errs)...)
			case p.Identity != nil:
				rule.Providers = append(rule.Providers, Info{Provider: ProviderIdentity})
			case p.KMS != nil:
				rule.Providers = append(rule.Providers, c.addKMS(p.KMS, path+".kms", kmsNames, &errs))
			}
		}
		c.rules = append(c.rules, rule)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// addKMS checks and adds one KMS provider (which cannot be used offline,
// but names the values it encrypted); kmsNames are the names seen so far.
func (c *Config) addKMS(k *kmsConfiguration, kpath string, kmsNames map[string]bool, errs *problems) Info {
	v := k.APIVersion
	if v == "" {
		v = "v1" // kube-apiserver's default (SetDefaults_KMSConfiguration)
	}
	if k.Name == "" {
		errs.add(kpath+".name", "name is a mandatory field for a provider")
	}
	if v != "v1" && strings.Contains(k.Name, ":") {
		errs.add(kpath+".name", "invalid KMS provider name %q, must not contain ':'", k.Name)
	}
	if v != "v1" && kmsNames[k.Name] {
		errs.add(kpath+".name", "duplicate KMS provider name %q, names must be unique", k.Name)
	}
	if v != "v1" && v != "v2" {
		errs.add(kpath+".apiVersion", "unsupported apiVersion %q for KMS provider, only v1 and v2 are supported", k.APIVersion)
	}
	kmsNames[k.Name] = true
	c.kms = append(c.kms, kmsEntry{name: k.Name, apiVersion: v})
	return Info{Provider: ProviderKMS, KeyName: k.Name}
}

// addKeys checks and adds the keys of one aescbc, aesgcm or secretbox provider.
func (c *Config) addKeys(provider string, keys []keyConfiguration, path string, sizes []int, errs *problems) []Info {
	if len(keys) == 0 {
		errs.add(path, "at least one key is required")
		return nil
	}
	var infos []Info
	for i, k := range keys {
		kpath := fmt.Sprintf("%s[%d]", path, i)
		if k.Name == "" {
			errs.add(kpath+".name", "name is a mandatory field for a key")
		}
		if k.Secret == "" {
			errs.add(kpath+".secret", "secret is a mandatory field for a key")
			continue
		}
		// The error from DecodeString names only a byte offset; it is not used anyway.
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			errs.add(kpath+".secret", "secrets must be base64 encoded (standard encoding, with padding)")
			continue
		}
		if !slices.Contains(sizes, len(secret)) {
			errs.add(kpath+".secret", "secret is not of the expected length, got %d bytes, expected one of %v", len(secret), sizes)
			continue
		}
		if k.Name == "" {
			continue
		}
		infos = append(infos, Info{Provider: provider, KeyName: k.Name})
		if c.findSame(provider, k.Name, secret) {
			continue
		}
		kc, err := newKeyCipher(provider, secret)
		if err != nil {
			errs.add(kpath+".secret", "%v", err)
			continue
		}
		c.keys = append(c.keys, &keyEntry{provider: provider, name: k.Name, path: kpath, secret: secret, cipher: kc})
	}
	return infos
}

func (c *Config) findSame(provider, name string, secret []byte) bool {
	for _, e := range c.keys {
		if e.provider == provider && e.name == name && bytes.Equal(e.secret, secret) {
			return true
		}
	}
	return false
}

// String summarises the configuration without secrets: the resources and, for each, the
// providers with key names. GoString is the same, so that no fmt verb prints key material.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("EncryptionConfiguration{")
	for i, r := range c.rules {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(r.Resources, ","))
		b.WriteString(": ")
		for j, p := range r.Providers {
			if j > 0 {
				b.WriteString(" ")
			}
			b.WriteString(p.String())
		}
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String.
func (c Config) GoString() string { return c.String() }

// groupResource is schema.GroupResource as parsed by schema.ParseGroupResource: the part before
// the first '.' is the resource, the rest is the group.
type groupResource struct{ group, resource string }

func parseGroupResource(s string) groupResource {
	if i := strings.Index(s, "."); i >= 0 {
		return groupResource{group: s[i+1:], resource: s[:i]}
	}
	return groupResource{resource: s}
}

// validateResourceOverlap mirrors kube-apiserver's check within one resources list.
func validateResourceOverlap(resources []string, path string, errs *problems) {
	if len(resources) < 2 {
		return
	}
	var dup, overlap bool
	for i, a := range resources {
		r1 := parseGroupResource(a)
		for j, b := range resources {
			if i == j {
				continue
			}
			r2 := parseGroupResource(b)
			switch {
			case r1 == r2:
				dup = true
			case r1 == groupResource{group: "*", resource: "*"}:
				overlap = true
			case r1.group == r2.group && (r1.resource == "*" || r2.resource == "*"):
				overlap = true
			}
		}
	}
	if dup {
		errs.add(path, "the same resource cannot be specified multiple times")
	}
	if overlap {
		errs.add(path, "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked")
	}
}

// validateResourceNames mirrors kube-apiserver's checks on resource names.
func validateResourceNames(resources []string, path string, errs *problems) {
	for j, r := range resources {
		p := fmt.Sprintf("%s[%d]", path, j)
		gr := parseGroupResource(r)
		switch {
		case strings.ToLower(r) != r:
			errs.add(p, "resource name %q should not contain capital letters", r)
		case r == "*":
			errs.add(p, "use '*.' to encrypt all the resources from core API group or '*.*' to encrypt all resources")
		case r == "apiserveripinfo" || r == "serviceipallocations" || r == "servicenodeportallocations":
			errs.add(p, "resource %q: resources which do not have REST API/s cannot be encrypted", r)
		case gr.group == "events.k8s.io":
			errs.add(p, "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file")
		case gr.group == "extensions":
			errs.add(p, "'extensions' group has been removed and cannot be used for encryption")
		case gr.group == "*" && gr.resource != "*":
			errs.add(p, "resource %q: encrypting the same resource across groups is not supported", r)
		}
	}
}

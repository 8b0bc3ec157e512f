package rules_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

// An EncryptionConfiguration as an operator would have it: every provider
// snapshift can decrypt offline, and KMS for one Secret resource type.
const encConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [services]
  providers:
  - aescbc:
      keys:
      - {name: svc-key, secret: c2VydmljZXMtYWVzY2JjLWtleS0zMi1ieXRlcy0xMjM=}
  - identity: {}
- resources: [ipaddresses.networking.k8s.io]
  providers:
  - aesgcm:
      keys:
      - {name: ip-key, secret: aXBhZGRyZXNzZXMtYWVzZ2NtLWtleS0zMmJ5dGVzITE=}
  - identity: {}
- resources: [configmaps]
  providers:
  - secretbox:
      keys:
      - {name: cm-key, secret: Y29uZmlnbWFwcy1zZWNyZXRib3gta2V5LTMyYnl0ZXM=}
  - identity: {}
- resources: [secrets]
  providers:
  - kms:
      apiVersion: v2
      name: vault
      endpoint: unix:///var/run/kms.sock
  - identity: {}
`

// encryptSample writes the sample with its Services, IPAddresses and
// ConfigMaps encrypted as kube-apiserver would store them under encConfig,
// and one Secret with a (fake) KMS v2 envelope.
func encryptSample(t *testing.T, enc *encryption.Config) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "encrypted.db")
	return testfile.RewriteLive(t, samplePath, out, func(key string, value []byte) ([]byte, error) {
		var info *encryption.Info
		switch {
		case strings.HasPrefix(key, "/registry/services/specs/"):
			info = &encryption.Info{Provider: "aescbc", KeyName: "svc-key"}
		case strings.HasPrefix(key, "/registry/ipaddresses/"):
			info = &encryption.Info{Provider: "aesgcm", KeyName: "ip-key"}
		case strings.HasPrefix(key, "/registry/configmaps/"):
			info = &encryption.Info{Provider: "secretbox", KeyName: "cm-key"}
		case key == "/registry/secrets/demo/db-credentials":
			return []byte("k8s:enc:kms:v2:vault:\x0a\x05opaque-kms-envelope"), nil
		}
		if info == nil {
			return value, nil
		}
		return enc.Encrypt(key, value, *info)
	})
}

func TestEncryptedAtRest(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "enc.yaml")
	if err := os.WriteFile(cfgPath, []byte(encConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := encryptSample(t, enc)
	seedRules := func() []transform.Rule {
		rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}

	// Without the configuration: one clear refusal naming a key and the fix.
	_, err = transform.Run(context.Background(), transform.Config{Input: in, Output: filepath.Join(dir, "no.db"), Rules: seedRules()})
	var oe *option.Error
	if !errors.Is(err, state.ErrEncrypted) || !errors.As(err, &oe) || oe.Field != "Encryption" || !strings.Contains(err.Error(), "EncryptionConfiguration") {
		t.Fatalf("without an encryption configuration: %v; want a refusal naming the Encryption option", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "no.db")); !os.IsNotExist(err) {
		t.Fatal("an output was left behind")
	}

	out := filepath.Join(dir, "out.db")
	rep, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: seedRules(), Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replaced == 0 || rep.Created == 0 {
		t.Fatalf("nothing changed: %+v", rep)
	}
	inState, outState := readState(t, in), readState(t, out)
	c := codec.New()
	for _, k := range outState.keys() {
		v := outState.Live[k].KV.Value
		switch {
		case strings.HasPrefix(k, "/registry/services/specs/"):
			plain, info, err := enc.Decrypt(k, v)
			if err != nil || info.Provider != "aescbc" || info.KeyName != "svc-key" {
				t.Fatalf("%s: stored %v (%v), want aescbc svc-key", k, info, err)
			}
			svc := decodeTyped[*corev1.Service](t, c, k, plain)
			if ip := svc.Spec.ClusterIP; ip != "None" && ip != "" && svc.Spec.Type != corev1.ServiceTypeExternalName && !strings.HasPrefix(ip, "172.24.") {
				t.Errorf("%s: clusterIP %s not moved", k, ip)
			}
		case strings.HasPrefix(k, "/registry/ipaddresses/"):
			// aesgcm binds the value to its key: a renamed IPAddress must have
			// been re-encrypted for its new key to decrypt at all.
			plain, info, err := enc.Decrypt(k, v)
			if err != nil || info.Provider != "aesgcm" || info.KeyName != "ip-key" {
				t.Fatalf("%s: %v (%v), want aesgcm ip-key bound to this key", k, info, err)
			}
			ipa := decodeTyped[*networkingv1.IPAddress](t, c, k, plain)
			if !strings.HasPrefix(ipa.Name, "172.24.") || "/registry/ipaddresses/"+ipa.Name != k {
				t.Errorf("%s holds IPAddress %s", k, ipa.Name)
			}
		case k == "/registry/secrets/demo/db-credentials":
			if !bytes.Equal(v, inState.Live[k].KV.Value) {
				t.Errorf("the KMS-encrypted Secret no rule claims was not copied as stored")
			}
		case strings.HasPrefix(k, "/registry/configmaps/"):
			plain, info, err := enc.Decrypt(k, v)
			if err != nil || info.Provider != "secretbox" {
				t.Fatalf("%s: %v (%v)", k, info, err)
			}
			old, ok := inState.Live[k]
			if !ok {
				continue
			}
			if k == "/registry/configmaps/kube-system/kubeadm-config" {
				cm := decodeTyped[*corev1.ConfigMap](t, c, k, plain)
				if !strings.Contains(cm.Data["ClusterConfiguration"], "172.24.0.0/16") {
					t.Errorf("kubeadm-config not updated under encryption")
				}
			} else if k == "/registry/configmaps/kube-system/node-local-dns" {
				cm := decodeTyped[*corev1.ConfigMap](t, c, k, plain)
				if !strings.Contains(cm.Data["Corefile"], "bind 169.254.20.10 172.24.0.10") {
					t.Errorf("node-local-dns not updated under encryption:\n%s", cm.Data["Corefile"])
				}
			} else if !strings.Contains(k, "kube-proxy") && !strings.Contains(k, "kubelet-config") && !strings.Contains(k, "flannel") &&
				!bytes.Equal(v, old.KV.Value) {
				t.Errorf("%s: unchanged encrypted ConfigMap not copied byte for byte", k)
			}
		}
	}

	// A KMS Secret the sa-tokens rule cannot read does not stop the run: it
	// is copied as stored, and the notes list it with the command to run.
	rs, _, err := rules.Build(rules.Options{SATokensOptions: rules.SATokensOptions{SATokens: rules.SATokensClear}})
	if err != nil {
		t.Fatal(err)
	}
	kmsOut := filepath.Join(dir, "kms.db")
	rep, err = transform.Run(context.Background(), transform.Config{Input: in, Output: kmsOut, Rules: rs, Encryption: enc})
	if err != nil {
		t.Fatalf("sa-tokens over a KMS Secret: %v", err)
	}
	notes := strings.Join(rep.Rules[0].Notes, " ")
	if !strings.Contains(notes, "demo/db-credentials") || !strings.Contains(notes, "kubectl") || rep.Replaced == 0 {
		t.Errorf("sa-tokens report %+v: want the KMS Secret listed with the kubectl command, and the readable token Secrets cleared", rep.Rules[0])
	}
	kmsKey := "/registry/secrets/demo/db-credentials"
	if got, want := readState(t, kmsOut).Live[kmsKey].KV.Value, inState.Live[kmsKey].KV.Value; !bytes.Equal(got, want) {
		t.Errorf("the KMS Secret was not copied as stored")
	}
	// A rule that must read a KMS value (here: one that claims Secrets and
	// tolerates nothing) still stops with one clear refusal.
	strict := &strictRule{}
	_, err = transform.Run(context.Background(), transform.Config{Input: in, DryRun: true, Rules: []transform.Rule{strict}, Encryption: enc})
	if !errors.Is(err, state.ErrEncrypted) || !strings.Contains(err.Error(), "KMS") || !strings.Contains(err.Error(), "db-credentials") {
		t.Fatalf("a KMS value under a claimed prefix: %v", err)
	}
}

// strictRule claims every Secret and needs to read it.
type strictRule struct{}

func (strictRule) Name() string       { return "strict" }
func (strictRule) Prefixes() []string { return []string{"/registry/secrets/"} }
func (strictRule) Apply(context.Context, *state.Object) (transform.Result, error) {
	return transform.Result{}, nil
}

// touchRule replaces every Service with itself: the same bytes.
type touchRule struct{}

func (touchRule) Name() string       { return "touch" }
func (touchRule) Prefixes() []string { return []string{"/registry/services/specs/"} }
func (touchRule) Apply(context.Context, *state.Object) (transform.Result, error) {
	return transform.Result{Action: transform.Replace}, nil
}

// TestReplacedBySameBytesKeepsCiphertext: a value a rule replaces without
// changing its plaintext keeps its stored ciphertext (kube-apiserver's
// random IV included), at a new revision; nothing is re-encrypted.
func TestReplacedBySameBytesKeepsCiphertext(t *testing.T) {
	enc, err := encryption.Parse([]byte(encConfig))
	if err != nil {
		t.Fatal(err)
	}
	// The Services encrypted as kube-apiserver encrypts them: a random IV
	// (this package's Encrypt would derive the IV, and re-encrypting would
	// then give the same bytes, keeping or not).
	key, _ := base64.StdEncoding.DecodeString("c2VydmljZXMtYWVzY2JjLWtleS0zMi1ieXRlcy0xMjM=") // encConfig's svc-key
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	in := testfile.RewriteLive(t, samplePath, filepath.Join(t.TempDir(), "in.db"), func(k string, v []byte) ([]byte, error) {
		if !strings.HasPrefix(k, "/registry/services/specs/") {
			return v, nil
		}
		pad := aes.BlockSize - len(v)%aes.BlockSize
		buf := append(bytes.Clone(v), bytes.Repeat([]byte{byte(pad)}, pad)...)
		iv := make([]byte, aes.BlockSize)
		if _, err := rand.Read(iv); err != nil {
			return nil, err
		}
		cipher.NewCBCEncrypter(block, iv).CryptBlocks(buf, buf)
		return append(append([]byte("k8s:enc:aescbc:v1:svc-key:"), iv...), buf...), nil
	})
	out := filepath.Join(t.TempDir(), "out.db")
	rep, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{touchRule{}}, Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	inState, outState := readState(t, in), readState(t, out)
	n, kept := 0, 0
	for _, k := range outState.keys() {
		if !strings.HasPrefix(k, "/registry/services/specs/") {
			continue
		}
		n++
		got, was := outState.Live[k], inState.Live[k]
		gotPlain, _, err := enc.Decrypt(k, got.KV.Value)
		if err != nil {
			t.Fatal(err)
		}
		wasPlain, _, _ := enc.Decrypt(k, was.KV.Value)
		if got.Rev == was.Rev {
			t.Errorf("%s: replaced, but at its old revision %v", k, was.Rev)
		}
		// Objects an older apiserver wrote (an empty clusterName the
		// current encoding drops) re-encode to other bytes, as
		// kube-apiserver's next write would: those are re-encrypted.
		if bytes.Equal(gotPlain, wasPlain) {
			kept++
			if !bytes.Equal(got.KV.Value, was.KV.Value) {
				t.Errorf("%s: replaced by the same plaintext, but re-encrypted instead of keeping its stored value", k)
			}
		}
	}
	if n == 0 || rep.Replaced != n || kept < n/2 {
		t.Fatalf("%d Services, %d replaced, %d by the same plaintext", n, rep.Replaced, kept)
	}
}

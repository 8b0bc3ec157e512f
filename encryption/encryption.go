package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"

	"github.com/snapshift/snapshift/codec"
)

// Info tells how a stored value is encrypted.
type Info struct {
	// Provider is "aescbc", "aesgcm", "secretbox", "identity" (not encrypted) or "kms".
	Provider string
	// KeyName is the key's name in the configuration (the KMS plugin name for "kms"); empty for
	// identity.
	KeyName string
}

// String returns "provider" or "provider:keyname".
func (i Info) String() string {
	if i.KeyName == "" {
		return i.Provider
	}
	return i.Provider + ":" + i.KeyName
}

var (
	// ErrKMS is returned for values encrypted by a KMS (v1 or v2) provider: their data key is
	// held by the KMS plugin, so they cannot be decrypted or written offline.
	ErrKMS = errors.New("encrypted with a KMS provider, which cannot be decrypted or encrypted offline")
	// ErrUnknownKey is returned when a value names a provider key that the configuration does not
	// have (Decrypt), or when asked to encrypt with one (Encrypt).
	ErrUnknownKey = errors.New("encryption key not in the encryption configuration")
	// ErrDecrypt is returned when a configured key does not decrypt a value: truncated or corrupted
	// ciphertext, bad padding, failed authentication (wrong secret, or for aesgcm a value read
	// under a different etcd key than it was written for).
	ErrDecrypt = errors.New("decryption failed")
)

const encPrefix = "k8s:enc:"

// providerPrefixes are the value prefixes of the providers this package can decrypt
// ([apiserver] pkg/server/options/encryptionconfig/config.go).
var providerPrefixes = []struct{ provider, prefix string }{
	{ProviderAESCBC, "k8s:enc:aescbc:v1:"},
	{ProviderAESGCM, "k8s:enc:aesgcm:v1:"},
	{ProviderSecretbox, "k8s:enc:secretbox:v1:"},
}

func providerPrefix(provider string) (string, bool) {
	for _, p := range providerPrefixes {
		if p.provider == provider {
			return p.prefix, true
		}
	}
	return "", false
}

// Decrypt returns the plaintext of value, stored in etcd under etcdKey (the full key, e.g.
// "/registry/secrets/default/mysecret"), and how it was encrypted.
//
// A value without the "k8s:enc:" prefix is returned as it is, with Info.Provider "identity".
// KMS values return an error wrapping [ErrKMS] (Info has Provider "kms" and the plugin name); a
// key name the configuration does not have returns an error wrapping [ErrUnknownKey]; a value
// that no matching key decrypts returns an error wrapping [ErrDecrypt]. For aesgcm, etcdKey
// must be the key the value was written under: it is the authenticated data.
func (c *Config) Decrypt(etcdKey string, value []byte) ([]byte, Info, error) {
	if !bytes.HasPrefix(value, []byte(encPrefix)) {
		return value, Info{Provider: ProviderIdentity}, nil
	}
	for _, p := range providerPrefixes {
		if !bytes.HasPrefix(value, []byte(p.prefix)) {
			continue
		}
		return c.decrypt(p.provider, etcdKey, value[len(p.prefix):])
	}
	for _, v := range []string{"v1", "v2"} {
		prefix := "k8s:enc:kms:" + v + ":"
		if !bytes.HasPrefix(value, []byte(prefix)) {
			continue
		}
		rest := value[len(prefix):]
		name := c.kmsName(v, rest)
		info := Info{Provider: ProviderKMS, KeyName: name}
		return nil, info, fmt.Errorf("etcd key %q: %w (kms %s provider %q)", etcdKey, ErrKMS, v, name)
	}
	if ei, ok := codec.ParseEncrypted(value); ok {
		return nil, Info{Provider: ei.Provider, KeyName: ei.KeyName}, fmt.Errorf(
			"etcd key %q: unsupported encryption provider %q version %q (key %q); supported: aescbc, aesgcm, secretbox (v1), kms (v1, v2)",
			etcdKey, ei.Provider, ei.Version, ei.KeyName)
	}
	return nil, Info{}, fmt.Errorf("etcd key %q: malformed encrypted value: the %q prefix is not followed by <provider>:<version>:<key name>:", etcdKey, encPrefix)
}

// kmsName finds the KMS plugin name at the start of rest: a configured name followed by ':'
// (kube-apiserver's prefix match), else everything up to the first ':'.
func (c *Config) kmsName(version string, rest []byte) string {
	for _, k := range c.kms {
		if k.apiVersion == version && bytes.HasPrefix(rest, []byte(k.name+":")) {
			return k.name
		}
	}
	return nameUpToColon(rest)
}

// nameUpToColon returns the key name at the start of rest, for messages only.
func nameUpToColon(rest []byte) string {
	if i := bytes.IndexByte(rest, ':'); i >= 0 {
		return string(rest[:i])
	}
	const max = 64
	if len(rest) > max {
		rest = rest[:max]
	}
	return string(rest)
}

// decrypt tries, in configuration order, every key of provider whose "<name>:" starts rest, as
// kube-apiserver's prefix transformers do.
func (c *Config) decrypt(provider, etcdKey string, rest []byte) ([]byte, Info, error) {
	type success struct {
		key *keyEntry
		pt  []byte
	}
	var (
		tried   []string
		matched string // name of the first key that matched the prefix
		oks     []success
	)
	for _, k := range c.keys {
		if k.provider != provider || !bytes.HasPrefix(rest, []byte(k.name+":")) {
			continue
		}
		if matched == "" {
			matched = k.name
		}
		if provider == ProviderAESGCM && etcdKey == "" {
			return nil, Info{Provider: provider, KeyName: k.name}, fmt.Errorf("%w: aesgcm key %q: the etcd key is required (it is the authenticated data)", ErrDecrypt, k.name)
		}
		pt, err := k.cipher.decrypt(rest[len(k.name)+1:], []byte(etcdKey))
		if err != nil {
			tried = append(tried, fmt.Sprintf("%q (%s): %v", k.name, k.path, err))
			continue
		}
		oks = append(oks, success{k, pt})
		if provider != ProviderAESCBC {
			break // authenticated: the first success is the answer, as in kube-apiserver
		}
	}
	if len(oks) > 1 {
		// Several aescbc secrets under the same name "decrypted" the value. CBC is not
		// authenticated: a wrong key passes the padding check about once in 256. Keep the
		// results that look like a stored Kubernetes object; refuse if that does not settle it.
		distinct := oks[:1]
		for _, o := range oks[1:] {
			if !bytes.Equal(o.pt, distinct[0].pt) {
				distinct = append(distinct, o)
			}
		}
		if len(distinct) > 1 {
			var plausible []success
			for _, o := range distinct {
				if codec.Detect(o.pt) != codec.Unknown {
					plausible = append(plausible, o)
				}
			}
			if len(plausible) != 1 {
				return nil, Info{Provider: provider, KeyName: matched}, fmt.Errorf(
					"%w: etcd key %q: aescbc key %q is configured with different secrets (%s and %s) and both decrypt this value to different data; remove the stale one from the configuration",
					ErrDecrypt, etcdKey, matched, distinct[0].key.path, distinct[1].key.path)
			}
			distinct = plausible
		}
		oks = distinct
	}
	if len(oks) > 0 {
		return oks[0].pt, Info{Provider: provider, KeyName: oks[0].key.name}, nil
	}
	name := nameUpToColon(rest)
	if len(tried) == 0 {
		return nil, Info{Provider: provider, KeyName: name}, fmt.Errorf("etcd key %q: %w: %s key %q (configured %s keys: %s)",
			etcdKey, ErrUnknownKey, provider, name, provider, c.keyNames(provider))
	}
	return nil, Info{Provider: provider, KeyName: matched}, fmt.Errorf("%w: etcd key %q, %s key %s", ErrDecrypt, etcdKey, provider, strings.Join(tried, "; key "))
}

func (c *Config) keyNames(provider string) string {
	var names []string
	for _, k := range c.keys {
		if k.provider == provider {
			names = append(names, fmt.Sprintf("%q", k.name))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Encrypt encrypts plaintext for storage under etcdKey the way kube-apiserver does with the
// given provider and key name: "k8s:enc:<provider>:v1:<name>:" + nonce/IV + ciphertext. The
// nonce/IV is derived from the data key, etcdKey and plaintext (synthetic IV, see the package
// doc), so the same value under the same key always gives the same bytes, and a different one a
// different nonce. aesgcm also binds the ciphertext to etcdKey (authenticated data); aescbc and
// secretbox only derive their IV from it. Provider "identity" returns a copy of plaintext; "kms" returns an error wrapping [ErrKMS].
// A key name the configuration does not have for that provider returns an error wrapping
// [ErrUnknownKey].
func (c *Config) Encrypt(etcdKey string, plaintext []byte, info Info) ([]byte, error) {
	switch info.Provider {
	case ProviderIdentity:
		return bytes.Clone(plaintext), nil
	case ProviderKMS:
		return nil, fmt.Errorf("etcd key %q: %w (kms provider %q)", etcdKey, ErrKMS, info.KeyName)
	}
	prefix, ok := providerPrefix(info.Provider)
	if !ok {
		return nil, fmt.Errorf("etcd key %q: unsupported encryption provider %q; supported: aescbc, aesgcm, secretbox, identity", etcdKey, info.Provider)
	}
	var key *keyEntry
	for _, k := range c.keys {
		if k.provider != info.Provider || k.name != info.KeyName {
			continue
		}
		if key != nil {
			return nil, fmt.Errorf("etcd key %q: %s key %q is configured with different secrets (%s and %s); cannot tell which one kube-apiserver uses for this object",
				etcdKey, info.Provider, info.KeyName, key.path, k.path)
		}
		key = k
	}
	if key == nil {
		return nil, fmt.Errorf("etcd key %q: %w: %s key %q (configured %s keys: %s)",
			etcdKey, ErrUnknownKey, info.Provider, info.KeyName, info.Provider, c.keyNames(info.Provider))
	}
	if info.Provider == ProviderAESGCM && etcdKey == "" {
		return nil, fmt.Errorf("aesgcm key %q: the etcd key is required (it is the authenticated data)", info.KeyName)
	}
	head := prefix + key.name + ":"
	ct, err := key.cipher.encrypt([]byte(etcdKey), plaintext)
	if err != nil {
		return nil, fmt.Errorf("etcd key %q: %s key %q: %w", etcdKey, info.Provider, info.KeyName, err)
	}
	out := make([]byte, 0, len(head)+len(ct))
	out = append(out, head...)
	return append(out, ct...), nil
}

// keyEntry is one configured (provider, key name, secret).
type keyEntry struct {
	provider string
	name     string
	path     string // field path of its first appearance, for messages
	secret   []byte // compared to find duplicates; never printed
	cipher   keyCipher
}

// String and GoString keep the secret out of any formatted output.
func (k *keyEntry) String() string   { return k.provider + ":" + k.name + " (" + k.path + ")" }
func (k *keyEntry) GoString() string { return k.String() }

// keyCipher turns the payload after "k8s:enc:<provider>:v1:<name>:" into plaintext and back.
// aad is the etcd key; only AES-GCM authenticates it, every provider's encrypt derives its
// IV or nonce from it and the plaintext (sivKey.nonce).
type keyCipher interface {
	decrypt(payload, aad []byte) ([]byte, error)
	encrypt(aad, plaintext []byte) ([]byte, error)
}

func newKeyCipher(provider string, secret []byte) (keyCipher, error) {
	switch provider {
	case ProviderAESCBC, ProviderAESGCM:
		block, err := aes.NewCipher(secret)
		if err != nil {
			return nil, fmt.Errorf("cannot create an AES cipher from a %d-byte key", len(secret))
		}
		if provider == ProviderAESCBC {
			return cbcCipher{block: block, siv: newSIVKey(provider, secret)}, nil
		}
		aead, err := cipher.NewGCM(block)
		if err != nil || aead.NonceSize() != gcmNonceSize {
			return nil, errors.New("cannot create an AES-GCM cipher")
		}
		return gcmCipher{aead: aead, siv: newSIVKey(provider, secret)}, nil
	case ProviderSecretbox:
		if len(secret) != secretboxKeySize {
			return nil, fmt.Errorf("secretbox needs a %d-byte key, got %d bytes", secretboxKeySize, len(secret))
		}
		k := secretboxCipher{siv: newSIVKey(provider, secret)}
		copy(k.key[:], secret)
		return &k, nil
	}
	return nil, fmt.Errorf("unsupported provider %q", provider)
}

const (
	gcmNonceSize       = 12 // [apiserver] aes.go newGCM: "all data in etcd will be broken if this ever changes"
	secretboxNonceSize = 24 // [apiserver] secretbox.go nonceSize
	secretboxKeySize   = 32
)

// sivKey derives the IV or nonce of a value from its etcd key and plaintext, synthetic-IV
// style (the package doc's "Deterministic IVs and nonces" says why this is safe per
// provider): HMAC-SHA256 under a key of its own, derived from the data key.
type sivKey []byte

// sivLabel separates the IV key from every other use of the data key.
const sivLabel = "snapshift encryption: synthetic IV key v1 for provider "

// newSIVKey is HMAC-SHA256(data key, label || provider): a PRF output, so the IV key is
// independent of the cipher key in every way that matters here and differs per provider.
func newSIVKey(provider string, secret []byte) sivKey {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(sivLabel + provider))
	return m.Sum(nil)
}

// nonce is the first n bytes (n <= 32) of HMAC-SHA256(IV key, len(etcd key) as 8 bytes
// big-endian || etcd key || plaintext): the length prefix makes (key, plaintext) pairs
// encode uniquely, so two different pairs never feed the PRF the same input.
func (k sivKey) nonce(n int, etcdKey, plaintext []byte) []byte {
	m := hmac.New(sha256.New, k)
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], uint64(len(etcdKey)))
	m.Write(l[:])
	m.Write(etcdKey)
	m.Write(plaintext)
	return m.Sum(nil)[:n]
}

// cbcCipher mirrors [apiserver] encrypt/aes cbc: IV(16) + CBC(plaintext + PKCS#7), no
// authentication, no authenticated data. The IV is derived (sivKey), not random.
type cbcCipher struct {
	block cipher.Block
	siv   sivKey
}

func (t cbcCipher) decrypt(payload, _ []byte) ([]byte, error) {
	const bs = aes.BlockSize
	if len(payload) < bs {
		return nil, fmt.Errorf("the stored data (%d bytes) is shorter than the %d-byte IV", len(payload), bs)
	}
	iv, data := payload[:bs], payload[bs:]
	if len(data) == 0 {
		return nil, errors.New("the stored data has an IV but no ciphertext")
	}
	if len(data)%bs != 0 {
		return nil, fmt.Errorf("the ciphertext (%d bytes) is not a multiple of the %d-byte AES block size (truncated?)", len(data), bs)
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(t.block, iv).CryptBlocks(out, data)
	// PKCS#7, checked exactly as kube-apiserver does.
	pad := int(out[len(out)-1])
	if pad == 0 || pad > len(out) {
		return nil, errors.New("invalid PKCS#7 padding (wrong key or corrupted value)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("invalid PKCS#7 padding (wrong key or corrupted value)")
		}
	}
	return out[:len(out)-pad], nil
}

func (t cbcCipher) encrypt(aad, plaintext []byte) ([]byte, error) {
	const bs = aes.BlockSize
	pad := bs - len(plaintext)%bs // 1..16
	out := make([]byte, bs+len(plaintext)+pad)
	copy(out, t.siv.nonce(bs, aad, plaintext))
	copy(out[bs:], plaintext)
	for i := bs + len(plaintext); i < len(out); i++ {
		out[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(t.block, out[:bs]).CryptBlocks(out[bs:], out[bs:])
	return out, nil
}

// gcmCipher mirrors [apiserver] encrypt/aes gcm (NewGCMTransformer): nonce(12) + Seal(plaintext,
// additional data = etcd key). The nonce is derived from both (sivKey), not random.
type gcmCipher struct {
	aead cipher.AEAD
	siv  sivKey
}

func (t gcmCipher) decrypt(payload, aad []byte) ([]byte, error) {
	n := t.aead.NonceSize()
	if len(payload) < n+t.aead.Overhead() {
		return nil, fmt.Errorf("the stored data (%d bytes) is shorter than the %d-byte nonce and %d-byte tag", len(payload), n, t.aead.Overhead())
	}
	pt, err := t.aead.Open(nil, payload[:n], payload[n:], aad)
	if err != nil {
		return nil, errors.New("message authentication failed (wrong key, corrupted value, or a value written for a different etcd key: aesgcm authenticates the etcd key)")
	}
	return pt, nil
}

func (t gcmCipher) encrypt(aad, plaintext []byte) ([]byte, error) {
	n := t.aead.NonceSize()
	out := make([]byte, n, n+len(plaintext)+t.aead.Overhead())
	copy(out, t.siv.nonce(n, aad, plaintext))
	return t.aead.Seal(out, out[:n], plaintext, aad), nil
}

// secretboxCipher mirrors [apiserver] encrypt/secretbox: nonce(24) + secretbox.Seal; no
// authenticated data. The nonce is derived (sivKey), not random.
type secretboxCipher struct {
	key [secretboxKeySize]byte
	siv sivKey
}

func (t *secretboxCipher) decrypt(payload, _ []byte) ([]byte, error) {
	if len(payload) < secretboxNonceSize+secretbox.Overhead {
		return nil, fmt.Errorf("the stored data (%d bytes) is shorter than the %d-byte nonce and %d-byte tag", len(payload), secretboxNonceSize, secretbox.Overhead)
	}
	var nonce [secretboxNonceSize]byte
	copy(nonce[:], payload[:secretboxNonceSize])
	pt, ok := secretbox.Open(nil, payload[secretboxNonceSize:], &nonce, &t.key)
	if !ok {
		return nil, errors.New("authentication failed (wrong key or corrupted value)")
	}
	return pt, nil
}

func (t *secretboxCipher) encrypt(aad, plaintext []byte) ([]byte, error) {
	var nonce [secretboxNonceSize]byte
	copy(nonce[:], t.siv.nonce(secretboxNonceSize, aad, plaintext))
	return secretbox.Seal(nonce[:], plaintext, &nonce, &t.key), nil
}

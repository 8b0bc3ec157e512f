// Package encryption decrypts and re-encrypts values that kube-apiserver stored in etcd with
// encryption at rest, using the cluster's EncryptionConfiguration (the file given to
// kube-apiserver with --encryption-provider-config). It works offline, on values read from an
// etcd snapshot, and produces values that kube-apiserver reads back unchanged.
//
// # Configuration
//
// [Load] and [Parse] read apiVersion apiserver.config.k8s.io/v1, kind EncryptionConfiguration,
// and the legacy apiVersion v1, kind EncryptionConfig that kube-apiserver also accepts. Field
// names are decoded case-sensitively and unknown fields are ignored, as kube-apiserver does. The
// checks kube-apiserver makes on load are repeated (one provider per list element, at least one
// key, non-empty names, base64 secrets of the right length, KMS names unique and without ':',
// resource names), and errors name the file and the field path, e.g.
// "resources[0].providers[1].aescbc.keys[0].secret". Secrets never appear in errors: not the
// base64 text, not the decoded key.
//
// # Stored value formats
//
// As written by kube-apiserver (k8s.io/apiserver pkg/server/options/encryptionconfig/config.go and
// pkg/storage/value/encrypt/{aes,secretbox,identity}; checked against v0.30.14 and v0.36.3, which
// are identical here):
//
//	aescbc     "k8s:enc:aescbc:v1:<key name>:"    + 16-byte IV + AES-CBC(plaintext + PKCS#7 padding)
//	aesgcm     "k8s:enc:aesgcm:v1:<key name>:"    + 12-byte nonce + AES-GCM ciphertext + 16-byte tag
//	secretbox  "k8s:enc:secretbox:v1:<key name>:" + 24-byte nonce + NaCl secretbox (tag + ciphertext)
//	kms v1     "k8s:enc:kms:v1:<plugin name>:"    + envelope (needs the KMS plugin)
//	kms v2     "k8s:enc:kms:v2:<plugin name>:"    + EncryptedObject protobuf (needs the KMS plugin)
//	identity   the plaintext itself (never starts with "k8s:enc:")
//
// AES keys are 16, 24 or 32 bytes; secretbox keys are 32 bytes. kube-apiserver's
// NewGCMTransformer, NewCBCTransformer and NewSecretboxTransformer draw nonces and IVs at random
// (crypto/rand); this package derives them (next section), which a reader cannot tell apart: the
// format is the same and kube-apiserver never looks at how a nonce was chosen. PKCS#7 padding
// always adds 1..16 bytes; on read the padding is checked exactly as kube-apiserver does (the last
// byte n must be 1..len and the last n bytes must all be n).
//
// # Deterministic IVs and nonces
//
// Members restored one by one (`snapshift restore` once per member, as etcdutl's restore is run)
// must hold the same bytes, or etcd's corruption check sees different values for one key at one
// revision. So [Config.Encrypt] is deterministic: the same data key, etcd key and plaintext give
// the same stored value on every run and machine. (Values a run does not change are not
// re-encrypted at all: they are copied as stored, kube-apiserver's own random nonce included.)
// The IV or nonce is a synthetic IV, in the manner of SIV (RFC 5297) and Rogaway and Shrimpton's
// deterministic authenticated encryption:
//
//	ivKey = HMAC-SHA256(data key, "snapshift encryption: synthetic IV key v1 for provider " + provider)
//	nonce = HMAC-SHA256(ivKey, uint64be(len(etcd key)) || etcd key || plaintext)[:n]
//
// with n = 16 (aescbc), 12 (aesgcm), 24 (secretbox). ivKey is a PRF output under the data key,
// separate per provider, and used only as an HMAC key; the length prefix makes every (etcd key,
// plaintext) pair a distinct PRF input. HMAC-SHA256 is a PRF, so for distinct pairs the nonces are
// indistinguishable from independent uniform strings, which is exactly what the random nonces of
// kube-apiserver are; for an identical pair the whole stored value repeats. What an observer of
// the stored values learns beyond what random nonces show is therefore only which values are
// equal (same key, same etcd key, same plaintext), and that it learns anyway from etcd: an
// unchanged object keeps its bytes. Per provider:
//
//   - aescbc: CBC needs an IV the adversary cannot predict before it chooses a plaintext (a
//     predictable IV is what BEAST exploited). The IV of a plaintext not encrypted before is a
//     fresh PRF output, unknown without the data key, so CBC keeps its chosen-plaintext security
//     for distinct values; a repeated value repeats the ciphertext the observer has already seen
//     and gives nothing else. aescbc stays unauthenticated, as in kube-apiserver.
//   - aesgcm: GCM breaks when one nonce seals two different (plaintext, additional data) pairs
//     under one key (the keystream and the GHASH key leak: the "forbidden attack"). The nonce is
//     a function of the data key, the etcd key (GCM's additional data here) and the plaintext, so
//     one nonce seals two different pairs only if HMAC-SHA256 truncated to 96 bits collides on
//     different inputs: about q^2/2^97 for q values, the same bound as kube-apiserver's random
//     96-bit nonces (and the same advice to rotate keys after some 2^32 writes). An identical pair
//     gives the identical ciphertext and tag, which reveals nothing new.
//   - secretbox (XSalsa20-Poly1305): a reused nonce with different plaintexts would leak their XOR
//     and allow Poly1305 forgeries; by the same argument this needs a collision of a 192-bit PRF
//     output on different inputs (about q^2/2^193). The etcd key is in the derivation although
//     secretbox does not authenticate it, so a moved value gets a new nonce too.
//   - kms v1 and v2: the data encryption key (DEK) is generated and wrapped by the KMS plugin, and
//     kube-apiserver keeps the unwrapped key in memory only; this package has neither and never
//     calls a plugin. A KMS value is copied byte for byte (the same bytes on every run), or the
//     run refuses: [Config.Decrypt] and [Config.Encrypt] return [ErrKMS], a rule that needs such a
//     value stops (transform's Tolerant rules say in their notes what they left), and an object a
//     rule creates under a resource whose first provider is KMS is refused, not written in the
//     clear. So no KMS DEK or nonce is ever chosen here.
//
// # Which providers bind the etcd key
//
// kube-apiserver passes the full etcd key of the object (e.g. "/registry/secrets/ns/name",
// including the --etcd-prefix) as the value.Context to every transformer
// (pkg/storage/etcd3/store.go, authenticatedDataString). Only AES-GCM uses it:
//
//   - aesgcm seals with additional authenticated data = the etcd key (aes.go, gcm.TransformToStorage
//     / TransformFromStorage call aead.Seal/Open with dataCtx.AuthenticatedData()). A value copied
//     to another etcd key fails to decrypt ("message authentication failed"); it has to be
//     decrypted under its old key and encrypted again for the new one.
//   - aescbc ignores the context (cbc.TransformFromStorage/ToStorage never read dataCtx): no
//     authentication at all, a moved value still decrypts.
//   - secretbox ignores the context (secretbox.go never reads dataCtx; its comment "Does not perform
//     authentication of the data at rest" means no additional data: Poly1305 still authenticates
//     the ciphertext itself, so a wrong key or a corrupted value is detected): a moved value still
//     decrypts.
//   - kms v1 (AES-GCM since 1.25, CBC still read) and kms v2 (HKDF extended-nonce AES-GCM) also
//     bind the etcd key; this package cannot decrypt them offline and returns [ErrKMS].
//
// This was confirmed by running kube-apiserver's own transformers (k8s.io/apiserver v0.36.3):
// reading a value under a different etcd key succeeds for aescbc, secretbox and identity and fails
// for aesgcm. The test fixtures in testdata/apiserver-v0.36.3.json were produced that way.
// kube-apiserver reads values with derived nonces as any other: testdata/derived-v0.36.3.json holds
// values [Config.Encrypt] wrote (each provider, a plaintext and its one-bit change) that
// kube-apiserver's own transformers read back to their plaintexts, and TestDerivedReadByApiserver
// checks that Encrypt still writes exactly those bytes.
//
// # Reading like kube-apiserver
//
// kube-apiserver chooses the transformer by prefix: provider prefix first, then "<key name>:". If
// the same provider and key name appear more than once (key rotation across list entries, or
// several resource entries), every match is tried in configuration order until one succeeds.
// [Config.Decrypt] does the same over all entries of the configuration, whatever resource they
// are for. AES-CBC is not authenticated: a wrong key passes the padding check about once in 256.
// So for aescbc every matching secret is tried; if two different secrets under the same key name
// both decrypt a value, the result that looks like a stored object (codec.Detect: protobuf, JSON,
// CBOR) is kept, and if that does not settle it Decrypt reports the ambiguity instead of guessing.
// (kube-apiserver would take the first success.)
//
// [Config.Encrypt] writes with the provider and key name it is given (normally the [Info] that
// Decrypt returned), which keeps an object's encryption as it was. If that provider and key name
// are configured with different secrets in different places, Encrypt refuses, because it cannot
// tell which one kube-apiserver would use for the object's resource.
package encryption

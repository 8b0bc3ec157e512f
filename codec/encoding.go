package codec

import (
	"bytes"
)

// Encoding is the wire format of one stored value.
type Encoding int

// The encodings a stored value can have.
const (
	Unknown   Encoding = iota // none of the others
	Protobuf                  // "k8s\x00" + runtime.Unknown (built-in types)
	JSON                      // a JSON object (custom resources, CRDs, APIServices)
	CBOR                      // self-described CBOR (custom resources, alpha)
	Encrypted                 // "k8s:enc:..." (encryption at rest)
)

// String returns "unknown", "protobuf", "json", "cbor" or "encrypted".
func (e Encoding) String() string {
	switch e {
	case Protobuf:
		return "protobuf"
	case JSON:
		return "json"
	case CBOR:
		return "cbor"
	case Encrypted:
		return "encrypted"
	default:
		return "unknown"
	}
}

var (
	// protobufMagic starts every protobuf value ([apimachinery] serializer/protobuf/protobuf.go).
	protobufMagic = []byte("k8s\x00")
	// encryptedPrefix starts every value written by an encrypting provider
	// ([apiserver] pkg/server/options/encryptionconfig/config.go).
	encryptedPrefix = []byte("k8s:enc:")
	// cborMagic is the head of the self-described CBOR tag 55799 ([apimachinery] serializer/cbor/cbor.go).
	cborMagic = []byte{0xd9, 0xd9, 0xf7}
)

// Detect tells the encoding of a stored value from its first bytes only: the "k8s\x00" protobuf
// envelope, the "k8s:enc:" prefix of an encrypted value, the self-described CBOR tag d9 d9 f7, or
// '{' (after optional JSON whitespace) for JSON. Anything else is Unknown. Detect does not check
// that the rest of the value is well formed.
func Detect(value []byte) Encoding {
	switch {
	case bytes.HasPrefix(value, protobufMagic):
		return Protobuf
	case bytes.HasPrefix(value, encryptedPrefix):
		return Encrypted
	case bytes.HasPrefix(value, cborMagic):
		return CBOR
	}
	for _, b := range value {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return JSON
		default:
			return Unknown
		}
	}
	return Unknown
}

// EncryptedInfo is what the prefix of an encrypted value says about how it was encrypted.
type EncryptedInfo struct {
	Provider string // "aescbc", "aesgcm", "secretbox" or "kms" (other names are passed through)
	Version  string // "v1", or "v2" for KMS v2
	KeyName  string // the key (or KMS provider) name from the EncryptionConfiguration
}

// ParseEncrypted splits the prefix of an encrypted value,
// "k8s:enc:<provider>:<version>:<key name>:<ciphertext>" (KMS v2: "k8s:enc:kms:v2:<name>:..."),
// into its provider, version and key name. It reports false if value does not start with
// "k8s:enc:" or the prefix is incomplete. The key name ends at the first ':' after the version,
// as the apiserver's prefix matching implies; the ciphertext is not inspected.
func ParseEncrypted(value []byte) (EncryptedInfo, bool) {
	if !bytes.HasPrefix(value, encryptedPrefix) {
		return EncryptedInfo{}, false
	}
	rest := value[len(encryptedPrefix):]
	var parts [3]string
	for i := range parts {
		n := bytes.IndexByte(rest, ':')
		if n <= 0 {
			return EncryptedInfo{}, false
		}
		parts[i] = string(rest[:n])
		rest = rest[n+1:]
	}
	return EncryptedInfo{Provider: parts[0], Version: parts[1], KeyName: parts[2]}, true
}

// Package codec decodes and encodes Kubernetes objects exactly as kube-apiserver stores them in
// etcd, so that a rule can edit a stored object and write back bytes the apiserver accepts.
//
// A stored value is one of:
//
//   - Protobuf: the magic "k8s\x00" followed by a runtime.Unknown message whose TypeMeta carries
//     the stored apiVersion/kind and whose Raw field holds the typed object's protobuf. This is how
//     every built-in type is stored (kube-apiserver --storage-media-type defaults to protobuf).
//     Decode returns the typed object from client-go's scheme (e.g. *corev1.Service) with the
//     stored GVK set; Encode writes the same envelope with the same apiVersion/kind, using
//     apimachinery's protobuf serializer.
//   - JSON: custom resources, CustomResourceDefinitions (stored as apiextensions.k8s.io/v1beta1)
//     and APIServices. Decode returns an *unstructured.Unstructured. Custom resources are written
//     by the apiserver as a map (sorted keys, trailing newline); CRDs and APIServices are written
//     from typed Go structs, so their keys follow struct order. The codec remembers the key order
//     of every decoded JSON value and writes it back in that order, so both forms round-trip
//     byte for byte (keys added by an edit go after the stored ones, sorted).
//   - CBOR: custom resources when the alpha CBORServingAndStorage gate is on; prefix d9 d9 f7.
//     Decoded into *unstructured.Unstructured.
//   - Encrypted: "k8s:enc:<provider>:<version>:<key name>:<ciphertext>". Detect and
//     ParseEncrypted recognise it; Decode refuses it with ErrEncrypted (decryption is done
//     elsewhere, with the user's EncryptionConfiguration).
//
// Decoding never defaults or converts: what you get is what is stored.
//
// The k8s.io/api types silently skip protobuf fields they do not know. An object written by a
// Kubernetes newer than this build's k8s.io/api would therefore lose those fields when re-encoded.
// CheckRoundTrip guards against that: it decodes and re-encodes an unmodified value and fails
// with ErrNotRoundTrip unless the bytes are identical. Callers must run it before trusting an
// edit, and must write unmodified objects with their original bytes, never re-encoded.
//
// A Codec is safe for concurrent use.
package codec

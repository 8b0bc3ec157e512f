// Package labtools holds the lab's own programs (hack/lab, issue 33), a module
// of its own so that go-containerregistry stays out of snapshift's go.mod:
//
//   - pause: the pod sandbox; sleeps until SIGINT or SIGTERM.
//   - web: a tiny HTTP server that answers with its pod name and address.
//   - probe: DNS and HTTP checks run inside a pod (kubectl exec).
//   - mkimage: an OCI image tarball from static binaries, for ctr images import.
//
// Every binary is static (CGO_ENABLED=0): an image is one layer holding it.
package labtools

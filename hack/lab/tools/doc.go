// Package labtools holds the lab's own programs (hack/lab, issue 33), a module
// of its own so that go-containerregistry and gonum/plot stay out of
// snapshift's go.mod:
//
//   - pause: the pod sandbox; sleeps until SIGINT or SIGTERM.
//   - web: a tiny HTTP server that answers with its pod name and address.
//   - probe: DNS and HTTP checks run inside a pod (kubectl exec), and its
//     watch mode: the window's probes every 0.5 s (DaemonSet watch, and
//     /readyz from the operator's machine).
//   - window: the downtime window of each migration and rollback from the
//     probes and the lab's phases: outages, window.json, a table and
//     timelines drawn with gonum/plot.
//   - mkimage: an OCI image tarball from static binaries, for ctr images import.
//
// Every binary is static (CGO_ENABLED=0): an image is one layer holding it.
package labtools

// Package clusterops executes the staged cluster restart (package restart)
// against a running cluster with client-go, and checks the cluster after it
// (`snapshift cluster restart|check`): the cluster-wide half of the downtime
// window, after `snapshift node apply` has put every control-plane node in
// place.
//
// Restart runs the stages in order; each action is waited for (a rollout as
// `kubectl rollout status` waits for it), with a timeout per action. It is
// idempotent: a rollout whose pod template was restarted after the bundle
// was made is not restarted again, only waited for; pods already gone are
// skipped; the DNS handover and the webhooks' failurePolicy are read first
// and left alone when already done. A second run after a failure continues.
//
// Check runs every check and reports each in one line; it fails naming the
// checks that failed and what to read.
package clusterops

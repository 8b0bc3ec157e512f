// Package pki rebuilds a kubeadm control plane's certificates, keys and
// kubeconfig files offline, for a cluster whose etcd snapshot was migrated
// to new networks or new etcd members.
//
// The layout, file names, subjects, key usages and SANs are kubeadm's
// (v1.36, cmd/kubeadm/app/phases/certs/certlist.go, util/pkiutil and
// phases/kubeconfig), so that an operator recognises every file and
// `kubeadm certs check-expiration` / `kubeadm certs renew` keep working:
//
//	<CertDir>/ca.{crt,key}                       CN kubernetes (CA)
//	<CertDir>/apiserver.{crt,key}                CN kube-apiserver, serverAuth
//	<CertDir>/apiserver-kubelet-client.{crt,key} CN kube-apiserver-kubelet-client, clientAuth
//	<CertDir>/front-proxy-ca.{crt,key}           CN front-proxy-ca (CA)
//	<CertDir>/front-proxy-client.{crt,key}       CN front-proxy-client, clientAuth
//	<CertDir>/etcd/ca.{crt,key}                  CN etcd-ca (CA)
//	<CertDir>/etcd/server.{crt,key}              CN <node name>, serverAuth+clientAuth
//	<CertDir>/etcd/peer.{crt,key}                CN <node name>, serverAuth+clientAuth
//	<CertDir>/etcd/healthcheck-client.{crt,key}  CN kube-etcd-healthcheck-client, clientAuth
//	<CertDir>/apiserver-etcd-client.{crt,key}    CN kube-apiserver-etcd-client, clientAuth
//	<CertDir>/sa.{key,pub}                       service-account signing key pair
//
// Certificates are a declarative list ([Certs]), CAs first, each with the
// function of [Config] that computes its SANs. Building is pure (everything
// is computed in memory first) and writing is separate: every file is
// written atomically (temporary file in the same directory, fsync, rename),
// private keys 0600, certificates 0644, new directories 0700, and a file
// that is replaced is first kept as <file>.bak (or .bak.1, .bak.2, ... —
// a backup is never overwritten).
//
// Four operations:
//
//   - [RenewAPIServer] reissues apiserver.crt/key with the existing CA after
//     a Service CIDR change: the old first service IP SAN becomes the new
//     one, every other SAN is kept, extra SANs are added.
//   - [RenewEtcd] reissues the etcd serving, peer and client certificates
//     with the existing etcd CA for new member names and addresses.
//   - [GenerateAll] writes a whole new PKI into an empty directory (disaster
//     recovery when the CA keys are lost).
//   - [WriteKubeconfigs] writes admin.conf, super-admin.conf, kubelet.conf,
//     controller-manager.conf and scheduler.conf signed by the cluster CA.
//
// Each returns a [Result] listing the files written and backed up, with the
// SANs and expiry of every certificate, for the report; it never holds key
// material. [CAHash] gives the value of kubeadm join's
// --discovery-token-ca-cert-hash.
//
// Keys come from [Config.Keys] (fresh keys by default), so tests inject
// pre-generated keys and run fast and deterministically.
package pki

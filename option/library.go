package option

// Library declares the options outside the rules, once each: the fields
// of the library configs that an *Error names (transform.Config,
// snapshot.RestoreConfig, pki.Config, manifests.GenerateConfig,
// verify.Config), the flags only the command line has, and the rebuild
// file's keys outside networking. The CLI renders a field as its Flag, the
// rebuild command as its Key (a field declared nowhere is said in words,
// option.Words, never as its Go name). The rules' options are declared in
// the rules' files (rules.Entry.Options) and not repeated here; a field or
// flag a rule declares is looked up there first.
//
// Adding a flag or a key: one row here (the flag's help stays beside its
// cli.Flag in the command's file). TestLibraryTable (option) refuses a field
// or flag declared twice; the CLI's TestEveryFlagDeclared and rebuild's
// TestEveryKeyDeclared refuse a flag or key with no row (or rule option).
func Library() Table {
	return Table{
		// The engine and the restore (transform.Config, snapshot.RestoreConfig).
		{Fields: []string{"SkipHashCheck"}, Flag: "skip-hash-check", Key: "skipHashCheck"},
		{Fields: []string{"Encryption"}, Flag: "encryption-config", Key: "encryptionConfig"},
		{Fields: []string{"Output"}, Flag: "out", Key: "output"},
		{Fields: []string{"Force"}, Flag: "force"},
		{Fields: []string{"RevisionBump"}, Flag: "bump-revision", Key: "etcd.revisionBump"},
		{Fields: []string{"MarkCompacted"}, Flag: "mark-compacted"},
		{Fields: []string{"InitialCluster"}, Flag: "initial-cluster", Key: "etcd.members"},
		{Fields: []string{"InitialClusterToken"}, Flag: "initial-cluster-token", Key: "etcd.initialClusterToken"},
		{Fields: []string{"Route"}, Flag: "route"},
		{Fields: []string{"Writer"}, Flag: "writer"},
		{Fields: []string{"PeerURLs"}, Flag: "initial-advertise-peer-urls", Key: "etcd.members[].peerURL"},
		// pki.Config and manifests.GenerateConfig (certs, manifests). Their
		// ServiceCIDR, OldServiceCIDR and ControlPlaneEndpoint are the
		// rules' options of the same names (declared in the rules' files).
		{Fields: []string{"CertDir"}, Flag: "cert-dir", Key: "pki.source"},
		{Fields: []string{"GenerateAll"}, Flag: "all", Key: "an empty pki.source"},
		{Fields: []string{"NodeName"}, Flag: "node-name", Key: "etcd.members[].nodeName"},
		{Fields: []string{"AdvertiseAddress"}, Flag: "apiserver-advertise-address", Key: "etcd.members[].advertiseAddress"},
		{Fields: []string{"APIServerCertSANs"}, Flag: "apiserver-cert-extra-sans", Key: "pki.certSANs"},
		// pki's list of members and manifests' one member: one flag, the
		// same NAME=PEER_URL[,CLIENT_URL] syntax.
		{Fields: []string{"EtcdMembers", "EtcdMember"}, Flag: "etcd-member", Key: "etcd.members"},
		{Fields: []string{"DNSDomain"}, Flag: "service-dns-domain", Key: "networking.dnsDomain"},
		{Fields: []string{"KubernetesVersion"}, Flag: "kubernetes-version", Key: "manifests.kubernetesVersion"},
		{Fields: []string{"ImageRepository"}, Key: "manifests.imageRepository"},
		// manifests' PodCIDR is the pod-cidr rule's option (same flag, same
		// key) read into another library's field.
		{Fields: []string{"PodCIDR"}, Flag: "pod-network-cidr", Key: "networking.podSubnet"},
		{Fields: []string{"EtcdDataDir"}, Flag: "etcd-data-dir", Key: "etcd.dataDir"},
		{Fields: []string{"KeyAlgorithm"}, Flag: "encryption-algorithm"},
		{Fields: []string{"CertValidity"}, Flag: "certificate-validity-period"},
		{Fields: []string{"CAValidity"}, Flag: "ca-certificate-validity-period"},
		{Fields: []string{"ClusterName"}, Flag: "cluster-name"},

		// Flags only the command line has (no library field names them).
		{Flag: "output"}, {Flag: "quiet"}, {Flag: "profile"}, {Flag: "tmp-dir"},
		{Fields: []string{"EtcdPrefix"}, Flag: "etcd-prefix"}, {Flag: "dry-run"}, {Flag: "keep-alarms"}, {Flag: "compress"},
		{Fields: []string{"Name"}, Flag: "name", Key: "etcd.members[].name"},
		{Fields: []string{"DataDir"}, Flag: "data-dir"}, {Fields: []string{"WALDir"}, Flag: "wal-dir"}, {Flag: "config"},
		{Flag: "show-entry"}, {Flag: "show-secrets"}, {Flag: "show-managed-fields"}, {Flag: "generate"}, {Flag: "renew"},
		{Flag: "kubeconfig-dir"}, {Flag: "kubeconfig-out"}, {Flag: "kubeconfig-user"}, {Flag: "kubeconfig-group"},
		{Flag: "manifest-dir"}, {Flag: "out-dir"}, {Flag: "bundle"}, {Flag: "node"},
		{Flag: "root"}, {Flag: "backup-dir"}, {Flag: "preflight-only"}, {Flag: "stop-only"}, {Flag: "skip-health"},
		{Flag: "rollback-after"}, // node apply's deadline (nodeops)
		{Flag: "timeout"},
		// cluster restart|check (clusterops; the probe pod of the DNS check)
		{Flag: "kubeconfig"}, {Flag: "probe-image"}, {Flag: "probe-namespace"}, {Flag: "cluster-domain"},
		{Flag: "down"}, // a Node off through the window (fault worker-down)

		// Keys only the rebuild file has.
		{Key: "apiVersion"}, {Key: "kind"}, {Key: "snapshot"}, {Key: "ansible.serial"}, {Key: "installer.kubespray.groupVars"},
		{Key: "window.applyTimeout"}, {Key: "window.rollbackAfter"}, // node apply's --timeout and --rollback-after in the runbook
		{Key: "window.restartTimeout"},                  // cluster restart's --timeout in the runbook
		{Fields: []string{"Recovery"}, Key: "recovery"}, // the control plane was lost: node apply accepts a node without it
		{Key: "etcd.members[].clientURL"},
		{Key: "pki.nodeName"}, {Key: "pki.advertiseAddress"}, {Key: "pki.controlPlaneEndpoint"},
		{Key: "manifests.source"},
	}
}

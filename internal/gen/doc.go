// Package gen writes large, realistic Kubernetes etcd snapshot files through snapshot.Writer, for
// benchmarks and scale tests.
//
// A generated file has exactly the structure `etcdctl snapshot save` produces: a bbolt database with
// etcd's buckets (key, meta, lease, alarm, cluster, members, members_removed, auth, authUsers,
// authRoles), revision keys in the `key` bucket mapping to mvccpb.KeyValue values with consistent
// create/mod revisions and versions, tombstones, compaction markers, and the sha256 trailer.
//
// The contents start with every object of internal/sample (so that detection and the seed migration
// 192.168.0.0/16 -> 172.24.0.0/16, 10.244.0.0/16 -> 10.55.0.0/16 work on it), followed by bulk
// objects: Namespaces, Nodes with disjoint podCIDRs, Pods whose IPs lie in their Node's range,
// Events attached to etcd leases, ConfigMaps, Secrets, Leases, ServiceAccounts, Services with
// sequential ClusterIPs and their IPAddress objects, and JSON custom resources. About 10% of the keys
// have 2-4 revisions and about 1% end in a tombstone. The service-IP RangeAllocation is rewritten at
// the end so that its bitmap equals the set of Service IPs. The output satisfies `snapshift verify`
// for the old networks, and the seed migration of it satisfies verify for the new ones.
//
// Config.Profile changes the history and the mix: ProfileChurn is a long-lived busy cluster (many
// revisions, deletes, recreated Pods), ProfileServices the shape issue 28 measured (many Services
// each with its IPAddress, large Pods, exactly one update of every object, no deletes).
//
// Everything is a function of Config.Seed: the same configuration writes the same bytes. Values are
// built as typed k8s.io/api objects and encoded with package codec (protobuf envelope, JSON for
// custom resources) on all CPUs; one goroutine writes them in revision order through the Writer
// (the `key` bucket's pages laid out by its bulk loader, the other buckets in one bbolt transaction).
package gen

// Package manifests reads, updates, generates and writes the static Pod
// manifests of a kubeadm control plane (/etc/kubernetes/manifests:
// kube-apiserver.yaml, kube-controller-manager.yaml, kube-scheduler.yaml and
// etcd.yaml) for a cluster whose etcd snapshot was migrated to new networks
// or new etcd members.
//
// As in kubeadm (cmd/kubeadm/app/phases/controlplane and phases/etcd), Pods
// are typed [corev1.Pod] values built or changed by pure functions, and
// writing is separate:
//
//   - [Read] loads the manifests of a directory, keeping each file's bytes.
//   - [Update] changes only the flags a migration moves (the Service and Pod
//     CIDRs, the etcd member's name, URLs and data dir, the apiserver's etcd
//     servers and advertise address) and returns what it changed, as
//     [Change] values for the report. Every other flag keeps its place and
//     its spelling ("--flag=value" or "--flag", "value").
//   - [Generate] builds kubeadm v1.36's four static Pods from a
//     [GenerateConfig], for disaster recovery when no manifest survived.
//   - [WriteWith] writes each manifest whose bytes differ from the file on disk,
//     atomically, mode 0600 as kubeadm, keeping the replaced file as
//     <file>.bak (or .bak.1, .bak.2, ...: a backup is never overwritten).
//
// A manifest that was read is written back as its original text with only
// the changed scalars replaced (and added flags inserted as new lines), found
// through go.yaml.in/yaml/v3 node positions: comments, key order, quoting
// and indentation survive, and a diff of the file shows only the changed
// lines. The result is checked to decode to exactly the updated Pod; only a
// generated manifest, or one whose text cannot be edited in place (flow
// style, anchors, multi-line scalars), is marshalled from the typed Pod the
// way kubeadm does (sigs.k8s.io/yaml, keys sorted), and [Manifest.Render]
// says so.
//
// kubelet loads every file of its static Pod directory whose name does not
// start with a dot, backups included (it drops the later of two Pods with the
// same name, so the new manifest still wins). [WriteOptions.BackupDir] keeps
// backups elsewhere.
package manifests

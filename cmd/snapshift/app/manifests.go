package app

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/manifests"
)

func manifestsCommand() *cli.Command {
	return &cli.Command{
		Name:  "manifests",
		Usage: "rewrite the static-pod manifests for the new networks or etcd member, or generate kubeadm-equivalent ones",
		Description: "Reads kube-apiserver.yaml, kube-controller-manager.yaml, kube-scheduler.yaml and etcd.yaml from\n" +
			"--manifest-dir and rewrites only the flags that change (--service-cluster-ip-range, --cluster-cidr,\n" +
			"the etcd member flags, --data-dir and its volume), in place in the YAML text: a diff shows only those\n" +
			"lines. With --generate it writes kubeadm-equivalent manifests instead (disaster recovery). Files are\n" +
			"written atomically, 0600; replaced ones are kept in --backup-dir (never beside them: kubelet would run\n" +
			"a .bak as a static pod).\n\n" +
			"Example:\n   snapshift manifests --manifest-dir /etc/kubernetes/manifests --out-dir /root/new-manifests \\\n" +
			"     --service-cidr 172.24.0.0/16 --pod-network-cidr 10.55.0.0/16",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "manifest-dir", Value: "/etc/kubernetes/manifests", Usage: "the manifests to read"},
			&cli.StringFlag{Name: "out-dir", Usage: "where to write (default: --manifest-dir, in place)"},
			&cli.StringFlag{Name: "backup-dir", Usage: "where replaced files are kept (default: <out-dir>/../manifests-backup)"},
			&cli.BoolFlag{Name: "generate", Usage: "generate kubeadm-equivalent manifests instead of rewriting"},
			&cli.StringFlag{Name: "service-cidr", Usage: "the new service CIDR"},
			&cli.StringFlag{Name: "pod-network-cidr", Usage: "the new pod CIDR"},
			&cli.StringFlag{Name: "etcd-member", Usage: "this node's etcd member, NAME=PEER_URL[,CLIENT_URL]"},
			&cli.StringFlag{Name: "initial-cluster", Usage: "etcd --initial-cluster (default: the member alone)"},
			&cli.StringFlag{Name: "etcd-data-dir", Usage: "the restored etcd data dir on the host"},
			&cli.StringFlag{Name: "apiserver-advertise-address", Usage: "--generate: this node's address (rewrite: only if it changes)"},
			&cli.StringFlag{Name: "kubernetes-version", Usage: "--generate: e.g. v1.36.3"},
			&cli.StringFlag{Name: "node-name", Usage: "--generate: this node's name"},
			&cli.BoolFlag{Name: "force", Usage: "replace files that changed since they were read, or that were not read"},
			flagOutput(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("manifests takes no arguments")
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			var member manifests.EtcdMember
			if m := c.String("etcd-member"); m != "" {
				em, err := parseEtcdMember(m)
				if err != nil {
					return err
				}
				member = manifests.EtcdMember{Name: em.Name, PeerURL: em.PeerURL, ClientURL: em.ClientURL}
			}
			out := c.String("out-dir")
			if out == "" {
				out = c.String("manifest-dir")
			}
			backup := c.String("backup-dir")
			if backup == "" {
				backup = strings.TrimSuffix(out, "/") + "-backup"
			}
			var set *manifests.Set
			var changes []manifests.Change
			if c.Bool("generate") {
				var ms []manifests.EtcdMember
				if member.Name != "" {
					ms = append(ms, member)
				}
				set, err = manifests.Generate(manifests.GenerateConfig{
					KubernetesVersion: c.String("kubernetes-version"), NodeName: c.String("node-name"),
					AdvertiseAddress: c.String("apiserver-advertise-address"), ServiceCIDR: c.String("service-cidr"),
					PodCIDR: c.String("pod-network-cidr"), EtcdMembers: ms, EtcdDataDir: c.String("etcd-data-dir"),
				})
				if err != nil {
					return usagef("%v", err)
				}
			} else {
				src, err := manifests.Read(c.String("manifest-dir"))
				if err != nil {
					return err
				}
				set, changes, err = manifests.Update(src, manifests.Changes{
					ServiceCIDR: c.String("service-cidr"), PodCIDR: c.String("pod-network-cidr"), EtcdMember: member,
					InitialCluster: c.String("initial-cluster"), DataDir: c.String("etcd-data-dir"),
					AdvertiseAddress: c.String("apiserver-advertise-address"),
				})
				if err != nil {
					return refusedf("%v", err)
				}
			}
			res, err := manifests.WriteWith(set, manifests.WriteOptions{Dir: out, Force: c.Bool("force") || c.Bool("generate"), BackupDir: backup})
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(c.App.Writer, map[string]any{"changes": changes, "written": res})
			}
			for _, ch := range changes {
				line := fmt.Sprintf("[manifests] %s: %s %s", ch.File, ch.Action, ch.Field)
				if ch.Old != "" || ch.New != "" {
					line += fmt.Sprintf(" %s -> %s", ch.Old, ch.New)
				}
				if ch.Note != "" {
					line += " (" + ch.Note + ")"
				}
				fmt.Fprintln(c.App.Writer, line)
			}
			for _, p := range res.Written() {
				fmt.Fprintf(c.App.Writer, "[manifests] wrote %s\n", p)
			}
			if len(res.Written()) == 0 {
				fmt.Fprintln(c.App.Writer, "[manifests] nothing to change")
			}
			return nil
		},
	}
}

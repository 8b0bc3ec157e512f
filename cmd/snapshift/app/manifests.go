package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/option"
)

// manifestsOptions are the manifests command's options.
type manifestsOptions struct {
	common
	manifestDir, outDir, backupDir string
	generate, force                bool
	member                         string
	// The fields both modes share; the rest of the generate config.
	changes manifests.Changes
	gen     manifests.GenerateConfig
}

func (o *manifestsOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "manifest-dir", Value: "/etc/kubernetes/manifests", Destination: &o.manifestDir, Usage: "the manifests to read"},
		&cli.StringFlag{Name: "out-dir", Destination: &o.outDir, Usage: "where to write (default: --manifest-dir, in place)"},
		&cli.StringFlag{Name: "backup-dir", Destination: &o.backupDir, Usage: "where replaced files are kept (default: <out-dir>" + backupSuffix + ", e.g. /etc/kubernetes/manifests" + backupSuffix + ")"},
		&cli.BoolFlag{Name: "generate", Destination: &o.generate, Usage: "generate kubeadm-equivalent manifests instead of rewriting"},
		&cli.StringFlag{Name: "service-cidr", Destination: &o.changes.ServiceCIDR, Usage: "the new service CIDR"},
		&cli.StringFlag{Name: "pod-network-cidr", Destination: &o.changes.PodCIDR, Usage: "the new pod CIDR"},
		&cli.StringFlag{Name: "etcd-member", Destination: &o.member, Usage: "this node's etcd member, NAME=PEER_URL[,CLIENT_URL]"},
		&cli.StringFlag{Name: "initial-cluster", Destination: &o.changes.InitialCluster, Usage: "etcd --initial-cluster (default: the member alone)"},
		&cli.StringFlag{Name: "etcd-data-dir", Destination: &o.changes.DataDir, Usage: "the restored etcd data dir on the host"},
		&cli.StringFlag{Name: "apiserver-advertise-address", Destination: &o.changes.AdvertiseAddress, Usage: "--generate: this node's address (rewrite: only if it changes)"},
		&cli.StringFlag{Name: "kubernetes-version", Destination: &o.gen.KubernetesVersion, Usage: "--generate: e.g. v1.36.3"},
		&cli.StringFlag{Name: "node-name", Destination: &o.gen.NodeName, Usage: "--generate: this node's name"},
		&cli.BoolFlag{Name: "force", Destination: &o.force, Usage: "replace files that changed since they were read, or that were not read"},
		o.outputFlag(), o.quietFlag(),
	}
}

func (o *manifestsOptions) setup(c *cli.Context) error {
	if err := o.kubeadmNoArgs(c, "manifests writes kubeadm static-pod manifests"); err != nil {
		return err
	}
	if o.member != "" {
		em, err := parseEtcdMember(o.member)
		if err != nil {
			return err
		}
		o.changes.EtcdMember = manifests.EtcdMember{Name: em.Name, PeerURL: em.PeerURL, ClientURL: em.ClientURL}
	}
	if o.outDir == "" {
		o.outDir = o.manifestDir
	}
	if o.backupDir == "" {
		o.backupDir = strings.TrimSuffix(o.outDir, "/") + backupSuffix
	}
	return nil
}

func (o *manifestsOptions) Validate() error { return o.validateFormat() }

// build makes the manifests: generated, or the read ones with the changes.
func (o *manifestsOptions) build() (*manifests.Set, []manifests.Change, error) {
	if o.generate {
		g := o.gen
		g.AdvertiseAddress, g.ServiceCIDR, g.PodCIDR, g.EtcdDataDir = o.changes.AdvertiseAddress, o.changes.ServiceCIDR, o.changes.PodCIDR, o.changes.DataDir
		if o.changes.EtcdMember.Name != "" {
			g.EtcdMembers = []manifests.EtcdMember{o.changes.EtcdMember}
		}
		if o.changes.InitialCluster != "" {
			if o.changes.EtcdMember.Name == "" {
				return nil, nil, usagef("--initial-cluster with --generate needs --etcd-member: this node's member among those it lists")
			}
			members, err := manifests.InitialClusterMembers(o.changes.InitialCluster, o.changes.EtcdMember)
			if err != nil {
				return nil, nil, usagef("--initial-cluster %w", err)
			}
			g.EtcdMembers = members
		}
		set, err := manifests.Generate(g)
		if err != nil {
			return nil, nil, usagef("%w", err)
		}
		return set, nil, nil
	}
	if st, err := os.Stat(o.manifestDir); err != nil || !st.IsDir() {
		what := "does not exist"
		if err == nil {
			what = "is a file"
		}
		return nil, nil, usagef("--manifest-dir %s %s: give kubeadm's manifests directory (or --generate to write new manifests)", o.manifestDir, what)
	}
	src, err := manifests.Read(o.manifestDir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, manifests.ErrNoManifests) || errors.Is(err, manifests.ErrInvalidManifest) {
		return nil, nil, usagef("--manifest-dir: %w", err) // the flag names the wrong directory
	}
	if err != nil {
		return nil, nil, err
	}
	set, changes, err := manifests.Update(src, o.changes)
	if err == nil {
		return set, changes, nil
	}
	if msg, ok := option.Render(err, manifestsFlag); ok {
		return nil, nil, usageError{renderedError{msg: msg, err: err}} // a flag's value
	}
	return nil, nil, refusedf("%w", err)
}

// manifestsFlag names a manifests.Changes field as this command's flag.
func manifestsFlag(field string) string {
	if field == "DataDir" {
		return "--etcd-data-dir"
	}
	return flagName(field)
}

func (o *manifestsOptions) Run(context.Context) error {
	set, changes, err := o.build()
	if err != nil {
		return err
	}
	if !o.quiet {
		fmt.Fprintln(o.stderr, "[manifests] the manifests are written whole under temporary names, then renamed into place back to back, kube-apiserver.yaml last: if this run is killed, run the same command again (with --force if it refuses) to finish; replaced files are kept as backups")
	}
	res, err := manifests.WriteWith(set, manifests.WriteOptions{Dir: o.outDir, Force: o.force || o.generate, BackupDir: o.backupDir})
	if err != nil {
		return err
	}
	if o.json() {
		return writeJSON(o.stdout, manifestsDocument{typeMeta: newTypeMeta("ManifestsResult"), Changes: changes, Written: res})
	}
	for _, ch := range changes {
		fmt.Fprintf(o.stdout, "[manifests] %s\n", ch)
	}
	if o.quiet {
		return nil // the changes above, not the files written
	}
	for _, p := range res.Written() {
		fmt.Fprintf(o.stdout, "[manifests] wrote %s\n", p)
	}
	if len(res.Written()) == 0 {
		fmt.Fprintln(o.stdout, "[manifests] nothing to change")
	}
	return nil
}

func manifestsCommand() *cli.Command {
	o := &manifestsOptions{}
	return newCommand(o, o.flags(), cli.Command{
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
	})
}

// backupSuffix names the default --backup-dir after --out-dir (one place:
// the flag's help says it too).
const backupSuffix = "-backup"

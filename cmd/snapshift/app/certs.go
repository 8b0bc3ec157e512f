package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/pki"
)

// certsOptions are certs' options, named as kubeadm's.
type certsOptions struct {
	common
	cfg           pki.Config
	renew         string
	alg           string
	all           bool
	kubeconfigDir string
	sans          cli.StringSlice
	members       repeated // NAME=PEER_URL,CLIENT_URL holds a comma: not a StringSlice
	// --kubeconfig-user: one kubeconfig for a named identity.
	kubeUser, kubeOut string
	kubeGroups        cli.StringSlice
}

func (o *certsOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cert-dir", Value: "/etc/kubernetes/pki", Destination: &o.cfg.CertDir, Usage: "the certificate directory"},
		&cli.StringFlag{Name: "renew", Destination: &o.renew, Usage: "apiserver or etcd"},
		&cli.BoolFlag{Name: "all", Destination: &o.all, Usage: "generate a whole new PKI and the kubeconfigs"},
		&cli.StringFlag{Name: "kubeconfig-dir", Destination: &o.kubeconfigDir, Usage: "where --all writes admin.conf etc. (default: the cert dir's parent)"},
		&cli.StringFlag{Name: "service-cidr", Destination: &o.cfg.ServiceCIDR, Usage: "the (new) service CIDR"},
		&cli.StringFlag{Name: "old-service-cidr", Destination: &o.cfg.OldServiceCIDR, Usage: "the service CIDR the existing apiserver certificate was issued for"},
		&cli.StringFlag{Name: "node-name", Destination: &o.cfg.NodeName, Usage: "this control-plane node's name"},
		&cli.StringFlag{Name: "apiserver-advertise-address", Destination: &o.cfg.AdvertiseAddress, Usage: "this node's API server address"},
		&cli.StringFlag{Name: "control-plane-endpoint", Destination: &o.cfg.ControlPlaneEndpoint, Usage: "the shared endpoint host[:port]"},
		&cli.StringSliceFlag{Name: "apiserver-cert-extra-sans", Destination: &o.sans, Usage: "extra apiserver certificate SANs"},
		&cli.GenericFlag{Name: "etcd-member", Value: &o.members, Usage: "NAME=PEER_URL[,CLIENT_URL] (repeatable)"},
		&cli.StringFlag{Name: "service-dns-domain", Value: "cluster.local", Destination: &o.cfg.DNSDomain, Usage: "the cluster DNS domain"},
		&cli.StringFlag{Name: "cluster-name", Value: pki.DefaultClusterName, Destination: &o.cfg.ClusterName, Usage: "the kubeconfigs' cluster name (kubeadm-config's clusterName)"},
		&cli.StringFlag{Name: "encryption-algorithm", Destination: &o.alg,
			Usage: "the type of every new key, as kubeadm-config's encryptionAlgorithm: RSA-2048, RSA-3072, RSA-4096, ECDSA-P256 or ECDSA-P384 (default: --renew the CA key's type, else RSA-2048)"},
		&cli.DurationFlag{Name: "certificate-validity-period", Value: pki.DefaultCertValidity, Destination: &o.cfg.CertValidity, Usage: "the lifetime of new leaf certificates (kubeadm-config's certificateValidityPeriod)"},
		&cli.DurationFlag{Name: "ca-certificate-validity-period", Value: pki.DefaultCAValidity, Destination: &o.cfg.CAValidity, Usage: "--all: the lifetime of the new CAs (kubeadm-config's caCertificateValidityPeriod)"},
		&cli.BoolFlag{Name: "force", Destination: &o.cfg.Force, Usage: "--all: write into a non-empty --cert-dir (replaced files kept as .bak)"},
		&cli.StringFlag{Name: "kubeconfig-user", Destination: &o.kubeUser, Usage: "write one kubeconfig for this user (a client certificate CN signed by --cert-dir's ca.crt/ca.key), e.g. system:kube-proxy"},
		&cli.StringSliceFlag{Name: "kubeconfig-group", Destination: &o.kubeGroups, Usage: "--kubeconfig-user: a group (the certificate's O), repeatable"},
		&cli.StringFlag{Name: "kubeconfig-out", Destination: &o.kubeOut, Usage: "--kubeconfig-user: the file to write (0600; a replaced file is kept as .bak)"},
		o.outputFlag(), &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &o.quiet, Usage: "print nothing but errors (-o json still prints its report)"},
	}
}

func (o *certsOptions) setup(c *cli.Context) error {
	if err := o.kubeadmNoArgs(c, "certs writes kubeadm-layout certificates"); err != nil {
		return err
	}
	o.cfg.APIServerCertSANs = o.sans.Value()
	o.cfg.KeyAlgorithm = pki.KeyAlgorithm(o.alg)
	for _, m := range o.members {
		em, err := parseEtcdMember(m)
		if err != nil {
			return err
		}
		o.cfg.EtcdMembers = append(o.cfg.EtcdMembers, em)
	}
	return nil
}

func (o *certsOptions) Validate() error {
	if err := o.validateFormat(); err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{o.all, o.renew != "", o.kubeUser != ""} {
		if on {
			modes++
		}
	}
	if o.renew != "" && !slices.Contains(valueChoices["renew"], o.renew) {
		return usagef("--renew %q is not %s%s", o.renew, orList(valueChoices["renew"]), choiceHint(o.renew, valueChoices["renew"]))
	}
	if o.alg != "" && !slices.Contains(pki.KeyAlgorithms(), pki.KeyAlgorithm(o.alg)) {
		var algs []string
		for _, a := range pki.KeyAlgorithms() {
			algs = append(algs, string(a))
		}
		return usagef("--encryption-algorithm %q is not %s%s", o.alg, orList(algs), choiceHint(o.alg, algs))
	}
	switch {
	case modes > 1:
		return usagef("give one of --all, --renew and --kubeconfig-user")
	case o.kubeUser != "" && o.kubeOut == "":
		return usagef("--kubeconfig-user needs --kubeconfig-out FILE")
	case o.kubeUser == "" && (o.kubeOut != "" || len(o.kubeGroups.Value()) > 0):
		return usagef("--kubeconfig-out and --kubeconfig-group go with --kubeconfig-user")
	case o.kubeUser == "" && !o.all && o.renew != "apiserver" && o.renew != "etcd":
		return usagef("certs needs --renew apiserver, --renew etcd, --all or --kubeconfig-user")
	}
	if o.cfg.KeyAlgorithm == "" && o.renew != "" {
		o.cfg.KeyAlgorithm = o.caKeyAlgorithm()
	}
	o.cfg.SetDefaults()
	if err := o.cfg.Validate(); err != nil {
		return usagef("%w", err)
	}
	// What the mode needs, refused before Run says anything of writing.
	op := map[string]string{"apiserver": pki.OpRenewAPIServer, "etcd": pki.OpRenewEtcd}[o.renew]
	if o.all {
		op = pki.OpGenerateAll
	}
	if op != "" {
		if err := o.cfg.Check(op); err != nil {
			return usagef("%w", err)
		}
	}
	return nil
}

// caKeyAlgorithm is the type of the key of the CA --renew signs with (""
// when it cannot be read: the renewal says why).
func (o *certsOptions) caKeyAlgorithm() pki.KeyAlgorithm {
	base := pki.CACertAndKeyBaseName
	if o.renew == "etcd" {
		base = pki.EtcdCACertAndKeyBaseName
	}
	ca, err := pki.LoadCA(o.cfg.CertDir, base)
	if err != nil {
		return ""
	}
	alg, _ := pki.KeyAlgorithmOf(ca.Key)
	return alg
}

func (o *certsOptions) Run(context.Context) error {
	if !o.quiet {
		fmt.Fprintln(o.stderr, "[certs] every file is written whole under a temporary name, then all are renamed into place back to back: if this run is killed, run the same command again to finish (replaced files are kept as .bak)")
	}
	results, err := o.write()
	if err != nil {
		return err
	}
	if o.json() {
		return writeJSON(o.stdout, certsResultList{typeMeta: newTypeMeta("CertsResultList"), Items: results})
	}
	if o.quiet {
		return nil // the files written are the output; the list of them is progress
	}
	for _, r := range results {
		printCerts(o.stdout, r)
	}
	return nil
}

func (o *certsOptions) write() ([]pki.Result, error) {
	if o.kubeUser != "" {
		r, err := pki.WriteUserKubeconfig(o.cfg, filepath.Dir(o.kubeOut), filepath.Base(o.kubeOut), o.kubeUser, o.kubeGroups.Value())
		return []pki.Result{r}, err
	}
	switch o.renew {
	case "apiserver":
		r, err := pki.RenewAPIServer(o.cfg)
		return []pki.Result{r}, err
	case "etcd":
		r, err := pki.RenewEtcd(o.cfg)
		return []pki.Result{r}, err
	}
	r, err := pki.GenerateAll(o.cfg)
	if err != nil {
		return nil, err
	}
	dir := o.kubeconfigDir
	if dir == "" {
		dir = filepath.Dir(filepath.Clean(o.cfg.CertDir))
	}
	k, err := pki.WriteKubeconfigs(o.cfg, dir)
	return []pki.Result{r, k}, err
}

func certsCommand() *cli.Command {
	o := &certsOptions{}
	return newCommand(o, o.flags(), cli.Command{
		Name:  "certs",
		Usage: "write kubeadm-layout certificates and kubeconfigs for the new networks or members",
		Description: "Modes (one of):\n" +
			"   --renew apiserver   reuse ca.crt/ca.key; reissue apiserver.crt for the new service CIDR (the old\n" +
			"                       first service IP SAN replaced, every other SAN kept, plus --apiserver-cert-extra-sans)\n" +
			"   --renew etcd        reuse etcd/ca; reissue etcd server, peer and client certs for the member(s)\n" +
			"   --all               a whole new PKI in an empty --cert-dir, plus kubeconfigs (disaster recovery)\n" +
			"   --kubeconfig-user   one kubeconfig for a named identity, signed by --cert-dir's CA, pointing at\n" +
			"                       --control-plane-endpoint (or --apiserver-advertise-address): for hosts outside the\n" +
			"                       control plane with their own kubeconfigs (kube-proxy, a CNI agent) after a new CA\n" +
			"File names and layout are kubeadm's. Keys are 0600; every replaced file is kept as <file>.bak.\n\n" +
			"Example:\n   snapshift certs --renew apiserver --cert-dir /etc/kubernetes/pki \\\n" +
			"     --old-service-cidr 192.168.0.0/16 --service-cidr 172.24.0.0/16",
	})
}

// repeated is a flag given once per value, each value whole: urfave/cli's
// StringSlice splits every value at its commas (and its
// DisableSliceFlagSeparator is one switch for the whole program), which
// cut NAME=PEER_URL,CLIENT_URL in two.
type repeated []string

// Set appends one occurrence's value.
// repeatable: --etcd-member takes a value per occurrence.
func (*repeated) repeatable() {}

func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// String is the values, one occurrence each, for --help's default (none).
func (r *repeated) String() string {
	if r == nil {
		return ""
	}
	return strings.Join(*r, " ")
}

// parseEtcdMember reads NAME=PEER_URL[,CLIENT_URL].
func parseEtcdMember(s string) (pki.EtcdMember, error) {
	name, urls, ok := strings.Cut(s, "=")
	if !ok || name == "" || urls == "" {
		return pki.EtcdMember{}, usagef("--etcd-member %q: want NAME=PEER_URL[,CLIENT_URL]", s)
	}
	peer, client, _ := strings.Cut(urls, ",")
	return pki.EtcdMember{Name: name, PeerURL: peer, ClientURL: client}, nil
}

func printCerts(w io.Writer, r pki.Result) {
	fmt.Fprintf(w, "[certs] %s in %s\n", r.Operation, r.Dir)
	for _, f := range r.Files {
		line := fmt.Sprintf("  wrote %s (%s)", f.Path, f.Mode)
		if f.Backup != "" {
			line += ", old file kept as " + f.Backup
		}
		fmt.Fprintln(w, line)
		if f.Cert != nil && len(f.Cert.IPAddresses)+len(f.Cert.DNSNames) > 0 {
			fmt.Fprintf(w, "        SANs: %s\n", strings.Join(append(append([]string{}, f.Cert.DNSNames...), f.Cert.IPAddresses...), ", "))
		}
	}
	for _, r := range r.Reused {
		fmt.Fprintf(w, "  reused %s\n", r)
	}
	for _, ch := range r.Changes {
		fmt.Fprintf(w, "  %s\n", ch)
	}
}

package app

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/pki"
)

func certsCommand() *cli.Command {
	return &cli.Command{
		Name:  "certs",
		Usage: "write kubeadm-layout certificates and kubeconfigs for the new networks or members",
		Description: "Modes (one of):\n" +
			"   --renew apiserver   reuse ca.crt/ca.key; reissue apiserver.crt for the new service CIDR (the old\n" +
			"                       first service IP SAN replaced, every other SAN kept, plus --apiserver-cert-extra-sans)\n" +
			"   --renew etcd        reuse etcd/ca; reissue etcd server, peer and client certs for the member(s)\n" +
			"   --all               a whole new PKI in an empty --cert-dir, plus kubeconfigs (disaster recovery)\n" +
			"File names and layout are kubeadm's. Keys are 0600; every replaced file is kept as <file>.bak.\n\n" +
			"Example:\n   snapshift certs --renew apiserver --cert-dir /etc/kubernetes/pki \\\n" +
			"     --old-service-cidr 192.168.0.0/16 --service-cidr 172.24.0.0/16",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cert-dir", Value: "/etc/kubernetes/pki", Usage: "the certificate directory"},
			&cli.StringFlag{Name: "renew", Usage: "apiserver or etcd"},
			&cli.BoolFlag{Name: "all", Usage: "generate a whole new PKI and the kubeconfigs"},
			&cli.StringFlag{Name: "kubeconfig-dir", Usage: "where --all writes admin.conf etc. (default: the cert dir's parent)"},
			&cli.StringFlag{Name: "service-cidr", Usage: "the (new) service CIDR"},
			&cli.StringFlag{Name: "old-service-cidr", Usage: "the service CIDR the existing apiserver certificate was issued for"},
			&cli.StringFlag{Name: "node-name", Usage: "this control-plane node's name"},
			&cli.StringFlag{Name: "apiserver-advertise-address", Usage: "this node's API server address"},
			&cli.StringFlag{Name: "control-plane-endpoint", Usage: "the shared endpoint host[:port]"},
			&cli.StringSliceFlag{Name: "apiserver-cert-extra-sans", Usage: "extra apiserver certificate SANs"},
			&cli.StringSliceFlag{Name: "etcd-member", Usage: "NAME=PEER_URL[,CLIENT_URL] (repeatable)"},
			&cli.StringFlag{Name: "service-dns-domain", Value: "cluster.local", Usage: "the cluster DNS domain"},
			&cli.BoolFlag{Name: "force", Usage: "--all: write into a non-empty --cert-dir (replaced files kept as .bak)"},
			flagOutput(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("certs takes no arguments")
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			cfg := pki.Config{
				CertDir: c.String("cert-dir"), ServiceCIDR: c.String("service-cidr"), OldServiceCIDR: c.String("old-service-cidr"),
				NodeName: c.String("node-name"), AdvertiseAddress: c.String("apiserver-advertise-address"),
				ControlPlaneEndpoint: c.String("control-plane-endpoint"), APIServerCertSANs: c.StringSlice("apiserver-cert-extra-sans"),
				DNSDomain: c.String("service-dns-domain"), Force: c.Bool("force"),
			}
			for _, m := range c.StringSlice("etcd-member") {
				em, err := parseEtcdMember(m)
				if err != nil {
					return err
				}
				cfg.EtcdMembers = append(cfg.EtcdMembers, em)
			}
			cfg.SetDefaults()
			if err := cfg.Validate(); err != nil {
				return usagef("%v", err)
			}
			var results []pki.Result
			switch {
			case c.Bool("all") && c.String("renew") != "":
				return usagef("give --all or --renew, not both")
			case c.Bool("all"):
				r, err := pki.GenerateAll(cfg)
				if err != nil {
					return err
				}
				results = append(results, r)
				dir := c.String("kubeconfig-dir")
				if dir == "" {
					dir = filepath.Dir(filepath.Clean(cfg.CertDir))
				}
				k, err := pki.WriteKubeconfigs(cfg, dir)
				if err != nil {
					return err
				}
				results = append(results, k)
			case c.String("renew") == "apiserver":
				r, err := pki.RenewAPIServer(cfg)
				if err != nil {
					return err
				}
				results = append(results, r)
			case c.String("renew") == "etcd":
				r, err := pki.RenewEtcd(cfg)
				if err != nil {
					return err
				}
				results = append(results, r)
			default:
				return usagef("certs needs --renew apiserver, --renew etcd or --all")
			}
			if format == "json" {
				return writeJSON(c.App.Writer, results)
			}
			for _, r := range results {
				printCerts(c.App.Writer, r)
			}
			return nil
		},
	}
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

package rebuild

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/pki"
	"github.com/snapshift/snapshift/rules"
)

// sharedPKI are the files every control-plane node holds the same bytes
// of: the three CAs and the service-account key pair (what kubeadm's
// upload-certs shares). Every other certificate is the node's own.
var sharedPKI = []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key",
	"etcd/ca.crt", "etcd/ca.key", "sa.key", "sa.pub"}

// nodePath is a path under kubernetes/<node>/ in the bundle being built.
func (r *run) nodePath(n Node, parts ...string) string {
	return r.path(append([]string{bundle.KubeDir, n.NodeName}, parts...)...)
}

// firstNode is the node pki.nodeName names (the one whose PKI Source is).
func (r *run) firstNode() Node {
	for _, n := range r.cfg.Nodes() {
		if n.NodeName == r.cfg.PKI.NodeName {
			return n
		}
	}
	return r.cfg.Nodes()[0]
}

// serviceCIDR is the service range after the rebuild: the new one, with
// the range kubeadm-config records for a family it does not name (one
// family of a dual-stack cluster moves), else the recorded one.
func (r *run) serviceCIDR() string {
	var recorded string
	if r.cc != nil {
		recorded = r.cc.Networking.ServiceSubnet
	}
	return completeList(r.cfg.Networking.ServiceCIDR, recorded)
}

// podCIDR is the pod range after the rebuild, as serviceCIDR.
func (r *run) podCIDR() string {
	var recorded string
	if r.cc != nil {
		recorded = r.cc.Networking.PodSubnet
	}
	return completeList(r.cfg.Networking.PodNetworkCIDR, recorded)
}

// completeList is cidr.Complete on comma-separated lists: named, with
// recorded's range of every family named does not hold, in recorded's
// order. An unreadable recorded list leaves named as it is.
func completeList(named, recorded string) string {
	if named == "" || recorded == "" {
		return named + recorded
	}
	n, err := cidr.ParseList(named)
	if err != nil {
		return named
	}
	rec, err := cidr.ParseList(recorded)
	if err != nil {
		return named
	}
	return cidr.Join(cidr.Complete(n, rec))
}

// pkiConfig is the PKI configuration of node n: its name, address and etcd
// member, the cluster's SANs from the file and from kubeadm-config.
func (r *run) pkiConfig(n Node) pki.Config {
	c := pki.Config{
		CertDir: r.nodePath(n, "pki"), ServiceCIDR: r.serviceCIDR(),
		DNSDomain: r.cfg.Networking.DNSDomain, ClusterName: r.ks.clusterName, NodeName: n.NodeName,
		AdvertiseAddress: n.AdvertiseAddress, ControlPlaneEndpoint: r.cfg.Networking.ControlPlaneEndpoint,
		APIServerCertSANs: r.cfg.PKI.CertSANs, Now: r.opts.Now,
		EtcdMembers:  []pki.EtcdMember{{Name: n.NodeName, PeerURL: n.PeerURL, ClientURL: n.ClientURL}},
		KeyAlgorithm: r.ks.keyAlgorithm, CertValidity: r.ks.certValidity, CAValidity: r.ks.caValidity,
		// The bundle is a copy: the node's old files stay in its backup.
		NoBackup: true,
	}
	if cc := r.cc; cc != nil {
		c.APIServerCertSANs = append(append([]string(nil), c.APIServerCertSANs...), cc.APIServer.CertSANs...)
		if cc.Etcd.Local != nil {
			c.EtcdServerCertSANs, c.EtcdPeerCertSANs = cc.Etcd.Local.ServerCertSANs, cc.Etcd.Local.PeerCertSANs
		}
	}
	return c
}

// newPKI generates a whole new PKI first when there is none to reuse (the
// cluster-info rule needs the new CA): the CAs and sa.key once, in the
// first node's directory, copied byte for byte to the others; every other
// certificate and every kubeconfig per node.
func (r *run) newPKI(context.Context) error {
	if !r.cfg.NewPKI() {
		return nil
	}
	if r.serviceCIDR() == "" {
		return errors.New("a new PKI needs networking.serviceSubnet (the apiserver certificate holds its first address)")
	}
	first := r.firstNode()
	res, err := pki.GenerateAll(r.pkiConfig(first))
	if err != nil {
		return fmt.Errorf("node %s: %w", first.NodeName, err)
	}
	r.report.PKI = append(r.report.PKI, res)
	for _, n := range r.cfg.Nodes() {
		if n.NodeName == first.NodeName {
			continue
		}
		if err := copyFiles(r.nodePath(first, "pki"), r.nodePath(n, "pki"), sharedPKI); err != nil {
			return err
		}
		res, err := pki.IssueNode(r.pkiConfig(n))
		if err != nil {
			return fmt.Errorf("node %s: %w", n.NodeName, err)
		}
		r.report.PKI = append(r.report.PKI, res)
	}
	for _, n := range r.cfg.Nodes() {
		write := pki.WriteJoinedKubeconfigs
		if n.NodeName == first.NodeName {
			write = pki.WriteKubeconfigs
		}
		k, err := write(r.pkiConfig(n), r.nodePath(n))
		if err != nil {
			return fmt.Errorf("node %s: %w", n.NodeName, err)
		}
		r.report.PKI = append(r.report.PKI, k)
	}
	return r.joinToken(first)
}

// joinToken reads the new CA and makes the bootstrap token workers join with.
func (r *run) joinToken(first Node) error {
	var err error
	if r.caPEM, err = os.ReadFile(r.nodePath(first, "pki", "ca.crt")); err != nil {
		return err
	}
	if r.report.CAHash, err = pki.CAHash(r.caPEM); err != nil {
		return err
	}
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return fmt.Errorf("generating a bootstrap token: %w", err)
	}
	id, secret, _ := strings.Cut(token, ".")
	r.token = &rules.BootstrapToken{ID: id, Secret: secret}
	r.report.JoinCommand = fmt.Sprintf("kubeadm join %s --token %s.<secret: see RUNBOOK.md> --discovery-token-ca-cert-hash %s", r.apiEndpoint(), id, r.report.CAHash)
	r.logf("pki", "new PKI for %d control-plane nodes in %s/<node>/pki (CAs and sa.key shared), kubeconfigs in %s/<node>", len(r.cfg.Nodes()), bundle.KubeDir, bundle.KubeDir)
	return nil
}

// renewCerts reuses an existing PKI (pki.source, the certificate dir of
// pki.nodeName; only read). The first node gets a copy of it (no backups),
// with its apiserver certificate reissued when the service range moved
// and, when the node itself moved, rebuilt from its new identity (as the
// other nodes'), and its etcd certificates for its member. Every other
// node gets the shared files (CAs, sa.key) and, as `kubeadm join
// --control-plane` makes them, its own leaf certificates from those CAs.
// Every node that moved gets new kubeconfigs pointing at its new address.
func (r *run) renewCerts(context.Context) error {
	if r.cfg.NewPKI() {
		return nil
	}
	first := r.firstNode()
	for _, n := range r.cfg.Nodes() {
		var err error
		if n.NodeName == first.NodeName {
			err = r.renewFirst(n)
		} else {
			err = r.renewOther(n)
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", n.NodeName, err)
		}
	}
	if err := r.movedKubeconfigs(first); err != nil {
		return err
	}
	r.logf("certs", "reused the CA of %s; certificates reissued per node in %s/<node>/pki", r.cfg.PKI.Source, bundle.KubeDir)
	return nil
}

// renewFirst copies the source PKI for the source node and reissues what
// changed: its apiserver certificate from its new identity when it moved
// (its old address out, the new one in: kubeadm's SANs for the node, as
// on the other nodes), else with its SANs kept and the first service IP
// replaced when the service range moved; its etcd certificates for its
// member.
func (r *run) renewFirst(n Node) error {
	c := r.pkiConfig(n)
	if err := copyPKI(r.cfg.PKI.Source, c.CertDir); err != nil {
		return fmt.Errorf("copying %s: %w", r.cfg.PKI.Source, err)
	}
	if r.nodeMoved(n) {
		if c.ServiceCIDR == "" {
			return errors.New("rebuilding its apiserver certificate for its new address needs networking.serviceSubnet (the snapshot's kubeadm-config records none)")
		}
		res, err := pki.IssueNode(c, "apiserver")
		if err != nil {
			return err
		}
		r.report.PKI = append(r.report.PKI, res)
	} else if err := r.renewServiceIP(c); err != nil {
		return err
	}
	return r.renewEtcd(c)
}

// renewServiceIP reissues the apiserver certificate when the service
// range moved, keeping its other SANs.
func (r *run) renewServiceIP(c pki.Config) error {
	if r.report.Plan == nil || r.report.Plan.Service == nil || r.cfg.Networking.ServiceCIDR == "" {
		return nil
	}
	var recorded string
	if r.cc != nil {
		recorded = r.cc.Networking.ServiceSubnet
	}
	c.OldServiceCIDR = completeList(cidr.Join(r.report.Plan.Service.Old), recorded)
	if c.OldServiceCIDR == c.ServiceCIDR {
		return nil
	}
	res, err := pki.RenewAPIServer(c)
	if err != nil {
		return err
	}
	r.report.PKI = append(r.report.PKI, res)
	return nil
}

// renewEtcd reissues the etcd certificates for the node's member when the
// PKI holds the etcd CA's key (a stacked etcd).
func (r *run) renewEtcd(c pki.Config) error {
	if _, err := os.Stat(filepath.Join(c.CertDir, "etcd", "ca.key")); err != nil {
		return nil
	}
	res, err := pki.RenewEtcd(c)
	if err != nil {
		return err
	}
	r.report.PKI = append(r.report.PKI, res)
	return nil
}

// renewOther gives another node what `kubeadm join --control-plane`
// gives it: the shared files of the source and its own leaf certificates
// from those CAs. A leaf whose CA key the source lacks (an external CA)
// is copied from the source as it is.
func (r *run) renewOther(n Node) error {
	c := r.pkiConfig(n)
	if c.ServiceCIDR == "" {
		return errors.New("issuing its apiserver certificate needs networking.serviceSubnet (the snapshot's kubeadm-config records none)")
	}
	var shared []string
	for _, f := range sharedPKI {
		if _, err := os.Stat(filepath.Join(r.cfg.PKI.Source, f)); err == nil {
			shared = append(shared, f)
		}
	}
	if err := copyFiles(r.cfg.PKI.Source, c.CertDir, shared); err != nil {
		return err
	}
	var issue, copied []string
	for _, name := range pki.NodeLeaves() {
		spec, err := pki.CertByName(name)
		if err != nil {
			return err
		}
		caSpec, err := pki.CertByName(spec.CAName)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(c.CertDir, caSpec.BaseName+".key")); err == nil {
			issue = append(issue, name)
			continue
		}
		for _, ext := range []string{".crt", ".key"} {
			if _, err := os.Stat(filepath.Join(r.cfg.PKI.Source, spec.BaseName+ext)); err == nil {
				copied = append(copied, spec.BaseName+ext)
			}
		}
	}
	if err := copyFiles(r.cfg.PKI.Source, c.CertDir, copied); err != nil {
		return err
	}
	res, err := pki.IssueNode(c, issue...)
	if err != nil {
		return err
	}
	r.report.PKI = append(r.report.PKI, res)
	return nil
}

// nodeMoved reports whether the snapshot records node n at another
// address than its new one.
func (r *run) nodeMoved(n Node) bool {
	a, err := netip.ParseAddr(n.AdvertiseAddress)
	if err != nil {
		return false
	}
	for _, to := range r.moved {
		if to == a.Unmap() {
			return true
		}
	}
	return false
}

// movedKubeconfigs writes, with the existing CA, new kubeconfigs for every
// node that moved (their kubelet.conf, controller-manager.conf and
// scheduler.conf name the old address) and, when the control-plane
// endpoint changed (moved with its node, or given anew), for every node
// (admin.conf names it): as kubeadm writes them, super-admin.conf on the
// first node only.
func (r *run) movedKubeconfigs(first Node) error {
	endpointMoved := r.cc != nil && r.cc.ControlPlaneEndpoint != "" && r.cfg.Networking.ControlPlaneEndpoint != r.cc.ControlPlaneEndpoint
	for _, n := range r.cfg.Nodes() {
		if !endpointMoved && !r.nodeMoved(n) {
			continue
		}
		write := pki.WriteJoinedKubeconfigs
		if n.NodeName == first.NodeName {
			write = pki.WriteKubeconfigs
		}
		res, err := write(r.pkiConfig(n), r.nodePath(n))
		if err != nil {
			return fmt.Errorf("node %s: %w", n.NodeName, err)
		}
		r.report.PKI = append(r.report.PKI, res)
		why := "it moved to " + n.AdvertiseAddress
		if !r.nodeMoved(n) {
			why = "the control-plane endpoint changed to " + r.cfg.Networking.ControlPlaneEndpoint
		}
		r.report.ClusterConfiguration = append(r.report.ClusterConfiguration, fmt.Sprintf(
			"node %s: new kubeconfigs signed by the existing CA (%s), beside its certificates", n.NodeName, why))
	}
	return nil
}

// copyPKI copies a certificate directory of regular files (anything else
// is refused), keeping their modes, without its backups (*.bak, *.bak.N):
// an old private key has no place in the bundle.
func copyPKI(src, dst string) error {
	return fsutil.Copy(src, dst, fsutil.CopyOptions{Merge: true, DirMode: 0o700, Skip: isBackup})
}

// isBackup reports whether a file name is a backup (<file>.bak, .bak.N).
func isBackup(name string) bool {
	if strings.HasSuffix(name, ".bak") {
		return true
	}
	i := strings.LastIndex(name, ".bak.")
	if i < 0 {
		return false
	}
	_, err := strconv.Atoi(name[i+len(".bak."):])
	return err == nil
}

// copyFiles copies the named files (relative paths) from src to dst,
// keeping their modes.
func copyFiles(src, dst string, names []string) error {
	for _, name := range names {
		if err := fsutil.Copy(filepath.Join(src, name), filepath.Join(dst, name), fsutil.CopyOptions{Merge: true, DirMode: 0o700}); err != nil {
			return err
		}
	}
	return nil
}

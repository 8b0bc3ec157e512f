package rebuild

import (
	"context"
	"fmt"

	"github.com/snapshift/snapshift/manifests"
)

// manifests rewrites the existing static-pod manifests (only the flags that
// change) or, with no source, generates kubeadm-equivalent ones, for the
// first control-plane node (pki.nodeName) and its etcd member.
func (r *run) manifests(context.Context) error {
	c := r.cfg
	dir := r.path(KubeDir, "manifests")
	var self Member
	for _, m := range c.Etcd.Members {
		if m.Name == c.PKI.NodeName {
			self = m
		}
	}
	if self.Name == "" {
		self = c.Etcd.Members[0]
	}
	var set *manifests.Set
	if c.Manifests.Source != "" {
		src, err := manifests.Read(c.Manifests.Source)
		if err != nil {
			return err
		}
		var changes []manifests.Change
		set, changes, err = manifests.Update(src, manifests.Changes{
			ServiceCIDR: c.Networking.ServiceCIDR, PodCIDR: c.Networking.PodNetworkCIDR,
			EtcdMember:     manifests.EtcdMember{Name: self.Name, PeerURL: self.PeerURL, ClientURL: self.ClientURL},
			InitialCluster: c.InitialCluster(), DataDir: c.Etcd.DataDir,
		})
		if err != nil {
			return err
		}
		for _, ch := range changes {
			r.report.Manifests = append(r.report.Manifests, ch.String())
		}
	} else {
		if c.Networking.ServiceCIDR == "" || c.Networking.PodNetworkCIDR == "" {
			return fmt.Errorf("generating manifests needs networking.serviceSubnet and networking.podSubnet (give the current ones if they do not change)")
		}
		var ms []manifests.EtcdMember
		for _, m := range c.Etcd.Members {
			ms = append(ms, manifests.EtcdMember{Name: m.Name, PeerURL: m.PeerURL, ClientURL: m.ClientURL})
		}
		var err error
		set, err = manifests.Generate(manifests.GenerateConfig{
			KubernetesVersion: c.Manifests.KubernetesVersion, ImageRepository: c.Manifests.ImageRepository,
			NodeName: self.Name, AdvertiseAddress: c.PKI.AdvertiseAddress,
			ServiceCIDR: c.Networking.ServiceCIDR, PodCIDR: c.Networking.PodNetworkCIDR, DNSDomain: c.Networking.DNSDomain,
			EtcdMembers: ms, EtcdDataDir: c.Etcd.DataDir,
		})
		if err != nil {
			return err
		}
		r.report.Manifests = append(r.report.Manifests, "generated kubeadm-equivalent manifests for "+self.Name)
	}
	// The bundle's directory is new: backups, if any, go outside the
	// manifest dir (kubelet would load a .bak there as a static pod).
	res, err := manifests.WriteWith(set, manifests.WriteOptions{Dir: dir, Force: true, BackupDir: r.path(KubeDir, "manifests-backup")})
	if err != nil {
		return err
	}
	for _, p := range res.Written() {
		r.report.Manifests = append(r.report.Manifests, "wrote "+p)
	}
	r.logf("manifests", "%d manifests in %s", len(res.Written()), KubeDir+"/manifests")
	return nil
}

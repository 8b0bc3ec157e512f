//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/testfile"
)

// membersSample is the committed sample snapshot (internal/sample written
// by a real etcd).
var membersSample = repoPath("testdata/sample.db")

// membersEncConfig encrypts the sample's Services (aescbc), IPAddresses
// (aesgcm) and ConfigMaps (secretbox), as kube-apiserver would under it.
const membersEncConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [services]
  providers:
  - aescbc: {keys: [{name: svc, secret: c2VydmljZXMtYWVzY2JjLWtleS0zMi1ieXRlcy0xMjM=}]}
  - identity: {}
- resources: [ipaddresses.networking.k8s.io]
  providers:
  - aesgcm: {keys: [{name: ip, secret: aXBhZGRyZXNzZXMtYWVzZ2NtLWtleS0zMmJ5dGVzITE=}]}
  - identity: {}
- resources: [configmaps]
  providers:
  - secretbox: {keys: [{name: cm, secret: Y29uZmlnbWFwcy1zZWNyZXRib3gta2V5LTMyYnl0ZXM=}]}
  - identity: {}
`

// corruptCheckFlags turn on etcd's corruption checks (etcd 3.6+ names:
// the initial check and the compaction-hash check are feature gates, the
// periodic check a duration): a member whose data differs from its peers'
// at one revision exits at start or raises alarm:CORRUPT.
var corruptCheckFlags = []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true", "--corrupt-check-time=1s"}

// TestSeparateRestoresAgree is issue 38's scenario: the one-pass restore
// run once per member, as etcdutl's restore is, three members of one
// cluster written by three separate snapshift processes a second apart,
// then started together by real etcd servers with every corruption check
// on. Plain, encrypted at rest and with --dns-bridge (a rule that creates
// objects): the three databases are the same bytes, the members start,
// agree on hashkv at one revision and raise no alarm. A control cluster
// whose third member was migrated differently shows the checks are on.
func TestSeparateRestoresAgree(t *testing.T) {
	etcdBin, snapBin := etcdBinary(t), buildSnapshift(t)
	dir := t.TempDir()
	encPath := filepath.Join(dir, "enc.yaml")
	write(t, encPath, []byte(membersEncConfig), 0o600)
	enc, err := encryption.Parse([]byte(membersEncConfig))
	if err != nil {
		t.Fatal(err)
	}
	encrypted := encryptedSample(t, enc, filepath.Join(dir, "encrypted.db"))
	seed := []string{"--service-cidr", newServiceCIDR, "--pod-network-cidr", newPodCIDR}
	bridge := append(append([]string{}, seed...), "--keep-service-ip", "kube-system/kube-dns", "--dns-bridge")
	for _, c := range []struct {
		name  string
		snap  string
		flags []string
	}{
		{"plain", membersSample, seed},
		{"encrypted", encrypted, append(append([]string{}, seed...), "--encryption-config", encPath)},
		{"dns-bridge", membersSample, bridge},
		{"encrypted-dns-bridge", encrypted, append(append([]string{}, bridge...), "--encryption-config", encPath)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := restoreSeparately(t, snapBin, c.snap, t.TempDir(), func(int) []string { return c.flags })
			for _, m := range ms[1:] {
				if a, b := testfile.Sum(t, ms[0].db()), testfile.Sum(t, m.db()); a != b {
					t.Errorf("member %s's database differs from member %s's (%x, %x)", m.name, ms[0].name, a[:6], b[:6])
				}
			}
			cli := startMembers(t, etcdBin, ms)
			judgeAgreement(t, cli, ms)
		})
	}
	t.Run("control", func(t *testing.T) {
		// The third member migrated to another range: etcd must notice.
		other := []string{"--service-cidr", "172.25.0.0/16", "--pod-network-cidr", newPodCIDR}
		ms := restoreSeparately(t, snapBin, membersSample, t.TempDir(), func(i int) []string {
			if i == 2 {
				return other
			}
			return seed
		})
		judgeControl(t, etcdBin, ms)
	})
}

// restoredMember is one etcd member restored by snapshift.
type restoredMember struct {
	name, dataDir, peerURL, clientURL string
}

func (m restoredMember) db() string { return filepath.Join(m.dataDir, "member", "snap", "db") }

// restoreSeparately runs `snapshift restore` once per member, each run its
// own process, a second after the one before (a timestamp taken from the
// clock would differ), all with the same --initial-cluster.
func restoreSeparately(t *testing.T, bin, snap, dir string, flags func(i int) []string) []restoredMember {
	t.Helper()
	var ms []restoredMember
	var cluster []string
	for i := range 3 {
		peer, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		client, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		m := restoredMember{name: fmt.Sprintf("m%d", i), dataDir: filepath.Join(dir, fmt.Sprintf("m%d.etcd", i)),
			peerURL: fmt.Sprintf("http://127.0.0.1:%d", peer), clientURL: fmt.Sprintf("http://127.0.0.1:%d", client)}
		ms = append(ms, m)
		cluster = append(cluster, m.name+"="+m.peerURL)
	}
	for i, m := range ms {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond)
		}
		args := append([]string{"restore", snap, "--name", m.name, "--data-dir", m.dataDir, "--initial-cluster", strings.Join(cluster, ","),
			"--initial-advertise-peer-urls", m.peerURL, "--initial-cluster-token", "snapshift-e2e-members", "--quiet"}, flags(i)...)
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("snapshift %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return ms
}

// startMembers starts a real etcd server per member, corruption checks on,
// and returns a client of all three once each answers.
func startMembers(t *testing.T, bin string, ms []restoredMember) *clientv3.Client {
	t.Helper()
	logDir := t.TempDir()
	var cluster []string
	for _, m := range ms {
		cluster = append(cluster, m.name+"="+m.peerURL)
	}
	var procs []*proc
	var eps []string
	for _, m := range ms {
		args := append([]string{"--name", m.name, "--data-dir", m.dataDir, "--listen-peer-urls", m.peerURL,
			"--initial-advertise-peer-urls", m.peerURL, "--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-token", "snapshift-e2e-members"}, corruptCheckFlags...)
		procs = append(procs, start(t, "etcd-"+m.name, bin, args, logDir))
		eps = append(eps, m.clientURL)
	}
	dumpOnFailure(t, procs...)
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, m := range ms {
		for {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cli.Status(sctx, m.clientURL)
			scancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("member %s does not answer: %v", m.name, err)
			}
			for _, p := range procs {
				if done, perr := p.exited(); done {
					t.Fatalf("%s exited (%v) before the cluster was up", p.name, perr)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if done, err := p.exited(); done {
				t.Errorf("%s exited while the test ran: %v", p.name, err)
			}
		}
	})
	return cli
}

// judgeAgreement: after several periodic checks, no alarm, one hashkv at
// one revision on every member, and the cluster takes writes.
func judgeAgreement(t *testing.T, cli *clientv3.Client, ms []restoredMember) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	time.Sleep(5 * time.Second) // five periodic corruption checks (--corrupt-check-time=1s)
	st, err := cli.Status(ctx, ms[0].clientURL)
	if err != nil {
		t.Fatal(err)
	}
	rev := st.Header.Revision
	var hashes []string
	var first *clientv3.HashKVResponse
	for _, m := range ms {
		h, err := cli.HashKV(ctx, m.clientURL, rev)
		if err != nil {
			t.Fatalf("hashkv of %s at %d: %v", m.name, rev, err)
		}
		hashes = append(hashes, fmt.Sprintf("%s=%d", m.name, h.Hash))
		if first == nil {
			first = h
		} else if h.Hash != first.Hash || h.CompactRevision != first.CompactRevision {
			t.Errorf("members serve different data at revision %d: %s", rev, strings.Join(hashes, ", "))
		}
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(alarms.Alarms) > 0 {
		t.Errorf("alarms raised: %v", alarms.Alarms)
	}
	if _, err := cli.Put(ctx, "/snapshift-e2e/write", "after the checks"); err != nil {
		t.Errorf("the cluster refuses writes: %v", err)
	}
	t.Logf("3 members restored in 3 runs: the same database bytes; hashkv at revision %d (compacted at %d): %s; no alarm after 5 periodic checks; writes taken",
		rev, first.CompactRevision, strings.Join(hashes, ", "))
}

// judgeControl starts a cluster whose members hold different data: one
// of them must exit with an inconsistency or alarm:CORRUPT be raised.
func judgeControl(t *testing.T, bin string, ms []restoredMember) {
	t.Helper()
	logDir := t.TempDir()
	var cluster, eps []string
	for _, m := range ms {
		cluster = append(cluster, m.name+"="+m.peerURL)
		eps = append(eps, m.clientURL)
	}
	var procs []*proc
	for _, m := range ms {
		args := append([]string{"--name", m.name, "--data-dir", m.dataDir, "--listen-peer-urls", m.peerURL,
			"--initial-advertise-peer-urls", m.peerURL, "--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-token", "snapshift-e2e-members"}, corruptCheckFlags...)
		procs = append(procs, start(t, "etcd-"+m.name, bin, args, logDir))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if done, _ := p.exited(); done && strings.Contains(p.logText(), "inconsistency") {
				t.Logf("control: %s exited: etcd's initial corruption check found the differing member", p.name)
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		alarms, err := cli.AlarmList(ctx)
		cancel()
		if err == nil {
			for _, a := range alarms.Alarms {
				if a.Alarm == etcdserverpb.AlarmType_CORRUPT {
					t.Logf("control: alarm:CORRUPT raised on member %x: etcd's periodic check found the differing member", a.MemberID)
					return
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range procs {
		t.Logf("---- %s ----\n%s", p.name, tail(p.logText(), 3000))
	}
	t.Fatal("control: members holding different data started and raised no alarm: the corruption checks are not on")
}

// encryptedSample is the sample with its Services, IPAddresses and
// ConfigMaps encrypted under enc as kube-apiserver stores them.
func encryptedSample(t *testing.T, enc *encryption.Config, out string) string {
	t.Helper()
	return testfile.RewriteLive(t, membersSample, out, func(key string, value []byte) ([]byte, error) {
		var info *encryption.Info
		switch {
		case strings.HasPrefix(key, "/registry/services/specs/"):
			info = &encryption.Info{Provider: "aescbc", KeyName: "svc"}
		case strings.HasPrefix(key, "/registry/ipaddresses/"):
			info = &encryption.Info{Provider: "aesgcm", KeyName: "ip"}
		case strings.HasPrefix(key, "/registry/configmaps/"):
			info = &encryption.Info{Provider: "secretbox", KeyName: "cm"}
		}
		if info == nil {
			return value, nil
		}
		return enc.Encrypt(key, value, *info)
	})
}

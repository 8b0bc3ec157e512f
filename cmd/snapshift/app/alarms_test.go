package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestAlarms: a NOSPACE alarm raised on a real etcd is in its snapshot;
// inspect shows it; restore clears it by default (the member starts
// writable) and keeps it with --keep-alarms (the member starts read-only,
// as a plain etcdutl restore would); transform's output holds none.
func TestAlarms(t *testing.T) {
	ctx := context.Background()
	srv := etcdtest.StartT(t)
	if _, err := srv.Put(ctx, "/registry/configmaps/demo/a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	st, err := srv.Client().Status(ctx, srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	_, err = pb.NewMaintenanceClient(srv.Client().ActiveConnection()).Alarm(ctx,
		&pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: st.Header.MemberId, Alarm: pb.AlarmType_NOSPACE})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Put(ctx, "/registry/configmaps/demo/b", []byte("y")); err == nil || !strings.Contains(err.Error(), "space exceeded") {
		t.Fatalf("a write under NOSPACE: %v, want it refused (the alarm is not active)", err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.db")
	if err := srv.SaveSnapshot(ctx, in); err != nil {
		t.Fatal(err)
	}

	if r := run(t, "inspect", in, "--quiet"); r.code != ExitOK || !strings.Contains(r.stdout, "NOSPACE") {
		t.Errorf("inspect: exit %d, want the NOSPACE alarm shown:\n%s%s", r.code, r.stdout, r.stderr)
	}
	writable := func(t *testing.T, snap string, extra ...string) (bool, string) {
		t.Helper()
		port, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		peer := fmt.Sprintf("http://127.0.0.1:%d", port)
		data := filepath.Join(t.TempDir(), "m1.etcd")
		r := run(t, append([]string{"restore", snap, "--name", "m1", "--data-dir", data, "--initial-cluster", "m1=" + peer,
			"--initial-advertise-peer-urls", peer}, extra...)...)
		if r.code != ExitOK {
			t.Fatalf("restore %v: exit %d: %s", extra, r.code, r.stderr)
		}
		m := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: data, Name: "m1", PeerURL: peer})
		_, err = m.Put(ctx, "/registry/configmaps/demo/after", []byte("z"))
		return err == nil, r.stdout
	}
	if ok, out := writable(t, in); !ok || !strings.Contains(out, "NOSPACE") || !strings.Contains(out, "cleared") {
		t.Errorf("restore (default): writable=%v, output %q; want a writable member and the cleared alarm reported", ok, out)
	}
	if ok, out := writable(t, in, "--keep-alarms"); ok || !strings.Contains(out, "kept") {
		t.Errorf("restore --keep-alarms: writable=%v, output %q; want the alarm kept (read-only member)", ok, out)
	}
	out := filepath.Join(dir, "out.db")
	r := run(t, "transform", in, "--out", out, "--quiet")
	if r.code != ExitOK || !strings.Contains(r.stdout, "NOSPACE") {
		t.Fatalf("transform: exit %d, want the cleared alarm reported:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "inspect", out, "--quiet"); strings.Contains(r.stdout, "NOSPACE") {
		t.Errorf("transform's output still holds the alarm:\n%s", r.stdout)
	}
	if ok, _ := writable(t, out, "--keep-alarms"); !ok {
		t.Error("a member restored from transform's output (alarms kept) is not writable: the output carried the alarm")
	}
	kept := filepath.Join(dir, "kept.db")
	if r := run(t, "transform", in, "--out", kept, "--keep-alarms", "--quiet"); r.code != ExitOK {
		t.Fatalf("transform --keep-alarms: exit %d: %s", r.code, r.stderr)
	}
	if r := run(t, "inspect", kept, "--quiet"); !strings.Contains(r.stdout, "NOSPACE") {
		t.Errorf("transform --keep-alarms dropped the alarm:\n%s", r.stdout)
	}
}

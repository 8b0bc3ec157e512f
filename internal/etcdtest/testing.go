package etcdtest

import (
	"testing"
)

// StartT starts a new single-member server in a temporary directory of the test, fails the test if
// it cannot, and closes the server when the test ends.
func StartT(t testing.TB) *Server {
	t.Helper()
	s, err := Start(t.Context(), Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeT(t, s) })
	return s
}

// StartRestoredT is StartRestored for tests: it fails the test on error and closes the member when
// the test ends.
func StartRestoredT(t testing.TB, cfg RestoredConfig) *Server {
	t.Helper()
	s, err := StartRestored(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeT(t, s) })
	return s
}

// StartRestoredClusterT is StartRestoredCluster for tests: it fails the test on error and closes
// every member when the test ends.
func StartRestoredClusterT(t testing.TB, members []RestoredConfig) []*Server {
	t.Helper()
	servers, err := StartRestoredCluster(t.Context(), members)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := CloseAll(servers...); err != nil {
			t.Errorf("close restored cluster: %v", err)
		}
	})
	return servers
}

// RestoreT is Restore for tests, into a temporary directory of the test.
func RestoreT(t testing.TB, cfg RestoreConfig) []RestoredConfig {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	members, err := Restore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return members
}

func closeT(t testing.TB, s *Server) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Errorf("close %s: %v", s.Name(), err)
	}
}

// StartClusterT is StartCluster for tests: it fails the test on error and closes every member when
// the test ends.
func StartClusterT(t testing.TB, cfg ClusterConfig) []*Server {
	t.Helper()
	servers, err := StartCluster(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := CloseAll(servers...); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	return servers
}

// LaunchRestoredT is LaunchRestored for tests: it fails the test on error and closes the member
// when the test ends.
func LaunchRestoredT(t testing.TB, cfg RestoredConfig) *Server {
	t.Helper()
	s, err := LaunchRestored(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeT(t, s) })
	return s
}

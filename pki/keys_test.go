package pki

import (
	"crypto"
	"crypto/x509"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

// Tests never generate RSA keys: they take pre-generated ones from
// testdata/keys, committed. To make new ones:
//
//	go test ./pki -run TestRegenKeys -regen
var regen = flag.Bool("regen", false, "regenerate the pre-generated test keys under testdata/keys")

// numTestKeys per algorithm: enough for a whole PKI, the kubeconfigs and a
// few renewals without reusing a key within one test.
const numTestKeys = 24

var testKeyAlgs = []KeyAlgorithm{RSA2048, ECDSAP256}

func testKeyPath(alg KeyAlgorithm, i int) string {
	return filepath.Join("testdata", "keys", fmt.Sprintf("%s-%02d.key", strings.ToLower(string(alg)), i))
}

// TestRegenKeys checks the committed test keys (each loads, is of its
// algorithm, and none repeats); with -regen it first writes new ones.
func TestRegenKeys(t *testing.T) {
	if !*regen {
		keys, err := loadTestKeys()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for alg, ks := range keys {
			if len(ks) != numTestKeys {
				t.Errorf("%s: %d keys, want %d", alg, len(ks), numTestKeys)
			}
			for _, k := range ks {
				der, err := x509.MarshalPKIXPublicKey(k.Public())
				if err != nil {
					t.Fatal(err)
				}
				if seen[string(der)] {
					t.Errorf("%s: a key repeats", alg)
				}
				seen[string(der)] = true
			}
		}
		return
	}
	if err := os.MkdirAll(filepath.Join("testdata", "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, alg := range testKeyAlgs {
		for i := range numTestKeys {
			key, err := GenerateKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			data, err := keyutil.MarshalPrivateKeyToPEM(key)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(testKeyPath(alg, i), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

var (
	testKeysOnce sync.Once
	testKeysErr  error
	testKeysPool map[KeyAlgorithm][]crypto.Signer
)

func loadTestKeys() (map[KeyAlgorithm][]crypto.Signer, error) {
	testKeysOnce.Do(func() {
		testKeysPool = map[KeyAlgorithm][]crypto.Signer{}
		for _, alg := range testKeyAlgs {
			for i := range numTestKeys {
				k, err := loadKey(filepath.Dir(testKeyPath(alg, i)), strings.TrimSuffix(filepath.Base(testKeyPath(alg, i)), ".key"))
				if err != nil {
					testKeysErr = fmt.Errorf("%w (regenerate with: go test ./pki -run TestRegenKeys -regen)", err)
					return
				}
				testKeysPool[alg] = append(testKeysPool[alg], k)
			}
		}
	})
	return testKeysPool, testKeysErr
}

// testKeySource hands out the pre-generated keys in order, a different one
// for each request, and records which name got which.
type testKeySource struct {
	mu    sync.Mutex
	pool  map[KeyAlgorithm][]crypto.Signer
	next  map[KeyAlgorithm]int
	names []string
}

func newTestKeys(t *testing.T) *testKeySource {
	t.Helper()
	pool, err := loadTestKeys()
	if err != nil {
		t.Fatal(err)
	}
	return &testKeySource{pool: pool, next: map[KeyAlgorithm]int{}}
}

func (s *testKeySource) PrivateKey(name string, alg KeyAlgorithm) (crypto.Signer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.pool[alg]
	if len(keys) == 0 {
		return nil, fmt.Errorf("no pre-generated %s test keys", alg)
	}
	i := s.next[alg]
	if i >= len(keys) {
		return nil, fmt.Errorf("test needs more than %d %s keys (raise numTestKeys and -regen)", len(keys), alg)
	}
	s.next[alg] = i + 1
	s.names = append(s.names, name)
	return keys[i], nil
}

// testNow is the fixed clock of every test.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testConfig is a kubeadm-like single control-plane node: Service CIDR
// 172.24.0.0/16, node cp-1 at 10.0.0.10, two extra apiserver SANs.
func testConfig(t *testing.T, certDir string) Config {
	t.Helper()
	return Config{
		CertDir:           certDir,
		ServiceCIDR:       "172.24.0.0/16",
		NodeName:          "cp-1",
		AdvertiseAddress:  "10.0.0.10",
		APIServerCertSANs: []string{"api.example.com", "203.0.113.7"},
		Keys:              newTestKeys(t),
		Rand:              rand.NewChaCha8([32]byte{'s', 'n', 'a', 'p'}),
		Now:               func() time.Time { return testNow },
	}
}

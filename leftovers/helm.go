package leftovers

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
)

// helmReleaseType is the Secret type Helm 3 stores each release revision
// in (name sh.helm.release.v1.<release>.v<revision>): data.release is the
// release as JSON, gzipped and base64-encoded, whose manifest is the YAML
// of every resource the chart rendered.
const helmReleaseType = "helm.sh/release.v1"

// maxHelmRelease bounds a decompressed release (Helm's own limit on a
// Secret is 1 MiB compressed).
const maxHelmRelease = 64 << 20

// helmRelease is the part of a Helm release read here.
type helmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Manifest  string `json:"manifest"`
}

// helmLeftovers reads a Helm release Secret and names the resources of its
// manifest that pin an address of an old range: the next helm upgrade
// would try to apply them ("field is immutable" for a clusterIP). The
// addresses themselves are not shown: they are Secret data.
func (s *LeftoverScan) helmLeftovers(value []byte) (string, bool) {
	if !bytes.Contains(value, []byte(helmReleaseType)) {
		return "", false
	}
	o, err := s.codec().Decode(value)
	if err != nil {
		return "", false
	}
	sec, ok := o.Obj.(*corev1.Secret)
	if !ok || string(sec.Type) != helmReleaseType {
		return "", false
	}
	rel, err := s.decodeHelmRelease(sec.Data["release"])
	if err != nil {
		return fmt.Sprintf("Helm release Secret %s/%s could not be read: %v", sec.Namespace, sec.Name, err), true
	}
	var pinned []string
	for _, doc := range strings.Split(rel.Manifest, "\n---") {
		if found := s.find([]byte(doc), s.needles, s.groups4, isV4Char, 15, map[netip.Addr]bool{}); len(found) > 0 {
			pinned = append(pinned, manifestResource(doc))
		} else if found := s.find([]byte(doc), s.needle6, s.groups6, isV6Char, 45, map[netip.Addr]bool{}); len(found) > 0 {
			pinned = append(pinned, manifestResource(doc))
		}
	}
	if len(pinned) == 0 {
		return "", false
	}
	return fmt.Sprintf("Helm release %s/%s revision %d pins old-range addresses in %s (addresses not shown: Secret data); the next helm upgrade applies them again",
		rel.Namespace, rel.Name, rel.Version, strings.Join(pinned, ", ")), true
}

// decodeHelmRelease undoes Helm's base64 and gzip.
// The base64 is decoded into a buffer the scan reuses (DecodeString would
// copy data to a string, then allocate): nothing decoded is kept.
func (s *LeftoverScan) decodeHelmRelease(data []byte) (*helmRelease, error) {
	if n := base64.StdEncoding.DecodedLen(len(data)); cap(s.b64) < n {
		s.b64 = make([]byte, n)
	}
	raw := s.b64[:base64.StdEncoding.DecodedLen(len(data))]
	n, err := base64.StdEncoding.Decode(raw, data)
	if err != nil {
		return nil, fmt.Errorf("release is not base64: %w", err)
	}
	raw = raw[:n]
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("release is not gzip: %w", err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, maxHelmRelease)); err != nil {
			return nil, fmt.Errorf("release does not decompress: %w", err)
		}
	}
	var rel helmRelease
	if err := json.Unmarshal(raw, &rel); err != nil {
		return nil, fmt.Errorf("release is not JSON: %w", err)
	}
	return &rel, nil
}

// manifestResource names the resource a manifest document renders.
func manifestResource(doc string) string {
	var m struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m.Kind == "" {
		return "a document that does not parse"
	}
	if m.Metadata.Namespace != "" {
		return m.Kind + " " + m.Metadata.Namespace + "/" + m.Metadata.Name
	}
	return m.Kind + " " + m.Metadata.Name
}

// codec returns the scan's codec, made on first use (only Helm release
// Secrets are decoded).
func (s *LeftoverScan) codec() *codec.Codec {
	if s.cd == nil {
		s.cd = codec.New()
	}
	return s.cd
}

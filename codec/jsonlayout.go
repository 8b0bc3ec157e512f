package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
)

// jsonLayout is the key order of the JSON objects in one stored value.
//
// The apiserver writes custom resources from a map, so their keys are sorted and apimachinery's
// JSON serializer reproduces them. It writes CRDs (apiextensions.k8s.io/v1beta1) and APIServices
// from typed Go structs instead, so their keys follow the struct fields ("kind" before
// "apiVersion", "type" before "properties", ...), and raw JSON fields inside them (a schema's
// "default") keep whatever order the client sent. An *unstructured.Unstructured forgets that
// order, so for those values the layout is kept beside the object and used to write the keys back
// where they were.
type jsonLayout struct {
	keys   []string               // an object's keys in stored order
	fields map[string]*jsonLayout // layout of the object's values that are objects or arrays
	items  []*jsonLayout          // an array's elements (nil entries for scalars); nil if none is a container
}

// readJSONLayout records the key order of data. It returns nil if every object in data already
// has its keys in sorted order, which is what encoding a map gives.
func readJSONLayout(data []byte) (*jsonLayout, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	sorted := true
	l, err := readJSONValue(dec, &sorted)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the top-level JSON value")
	}
	if sorted {
		return nil, nil
	}
	return l, nil
}

func readJSONValue(dec *json.Decoder, sorted *bool) (*jsonLayout, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil, nil // a scalar
	}
	switch delim {
	case '{':
		l := &jsonLayout{}
		ordered := true // keys strictly increasing so far, so none repeats
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, ok := tok.(string)
			if !ok {
				return nil, fmt.Errorf("object key is %T, not a string", tok)
			}
			if n := len(l.keys); ordered && n > 0 && key <= l.keys[n-1] {
				ordered, *sorted = false, false
			}
			if !ordered && slices.Contains(l.keys, key) {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			l.keys = append(l.keys, key)
			child, err := readJSONValue(dec, sorted)
			if err != nil {
				return nil, err
			}
			if child != nil {
				if l.fields == nil {
					l.fields = make(map[string]*jsonLayout)
				}
				l.fields[key] = child
			}
		}
		_, err := dec.Token() // '}'
		return l, err
	case '[':
		l := &jsonLayout{}
		containers := false
		for dec.More() {
			child, err := readJSONValue(dec, sorted)
			if err != nil {
				return nil, err
			}
			containers = containers || child != nil
			l.items = append(l.items, child)
		}
		if !containers {
			l.items = nil
		}
		_, err := dec.Token() // ']'
		return l, err
	default:
		return nil, fmt.Errorf("unexpected %q", delim)
	}
}

// writeJSONLayout writes v (an unstructured value) as encoding/json would, except that the keys of
// each object come in the order recorded in l; keys that l does not know follow, sorted. Values
// without a layout are written by encoding/json itself, so strings, numbers and escaping are
// exactly those of the apiserver's encoder. The caller adds the trailing newline.
func writeJSONLayout(buf *bytes.Buffer, v any, l *jsonLayout) error {
	if l == nil {
		return writeJSONValue(buf, v)
	}
	switch t := v.(type) {
	case map[string]any:
		buf.WriteByte('{')
		written := 0
		for _, k := range l.keys {
			val, ok := t[k]
			if !ok {
				continue
			}
			if err := writeJSONMember(buf, written, k, val, l.fields[k]); err != nil {
				return err
			}
			written++
		}
		if written < len(t) {
			var rest []string
			for k := range t {
				if !slices.Contains(l.keys, k) {
					rest = append(rest, k)
				}
			}
			sort.Strings(rest)
			for _, k := range rest {
				if err := writeJSONMember(buf, written, k, t[k], nil); err != nil {
					return err
				}
				written++
			}
		}
		buf.WriteByte('}')
		return nil
	case []any:
		buf.WriteByte('[')
		for i, item := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			var il *jsonLayout
			if i < len(l.items) {
				il = l.items[i]
			}
			if err := writeJSONLayout(buf, item, il); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	default:
		return writeJSONValue(buf, v)
	}
}

func writeJSONMember(buf *bytes.Buffer, index int, key string, val any, l *jsonLayout) error {
	if index > 0 {
		buf.WriteByte(',')
	}
	if err := writeJSONValue(buf, key); err != nil {
		return err
	}
	buf.WriteByte(':')
	return writeJSONLayout(buf, val, l)
}

func writeJSONValue(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

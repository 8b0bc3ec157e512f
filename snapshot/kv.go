package snapshot

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// KV is a zero-copy view of a stored mvccpb.KeyValue: Key and Value point
// into the raw bytes they were parsed from (for a snapshot, its read-only
// memory map) and are valid only as long as those bytes are.
type KV struct {
	Key            []byte
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Version        int64
	Lease          int64
}

// ParseKV decodes a stored mvccpb.KeyValue without copying Key and Value.
// It accepts exactly what proto.Unmarshal into mvccpb.KeyValue accepts for
// the known fields, and skips unknown fields as protobuf requires.
func ParseKV(b []byte) (KV, error) {
	var kv KV
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return kv, fmt.Errorf("bad protobuf tag: %w", protowire.ParseError(n))
		}
		if !num.IsValid() {
			return kv, fmt.Errorf("bad protobuf field number %d", num)
		}
		b = b[n:]
		switch {
		case (num == 1 || num == 5) && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return kv, fmt.Errorf("bad field %d: %w", num, protowire.ParseError(m))
			}
			if num == 1 {
				kv.Key = v
			} else {
				kv.Value = v
			}
			b = b[m:]
		case num >= 2 && num <= 6 && num != 5 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return kv, fmt.Errorf("bad field %d: %w", num, protowire.ParseError(m))
			}
			switch num {
			case 2:
				kv.CreateRevision = int64(v)
			case 3:
				kv.ModRevision = int64(v)
			case 4:
				kv.Version = int64(v)
			case 6:
				kv.Lease = int64(v)
			}
			b = b[m:]
		case num >= 1 && num <= 6:
			return kv, fmt.Errorf("field %d has wire type %d", num, typ)
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return kv, fmt.Errorf("bad field %d: %w", num, protowire.ParseError(m))
			}
			b = b[m:]
		}
	}
	return kv, nil
}

// Marshal encodes kv as etcd stores it.
func (kv KV) Marshal() ([]byte, error) {
	if len(kv.Key) == 0 {
		return nil, errors.New("refusing to encode a KeyValue with an empty key")
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(&mvccpb.KeyValue{
		Key:            kv.Key,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
		Version:        kv.Version,
		Value:          kv.Value,
		Lease:          kv.Lease,
	})
}

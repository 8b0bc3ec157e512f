package snapshot

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"google.golang.org/protobuf/proto"
)

// AlarmBucket is etcd's alarm bucket: one key per active alarm, the
// marshalled etcdserverpb.AlarmMember. etcd reloads it at boot, so an alarm
// in a snapshot survives a plain restore: a NOSPACE alarm leaves the
// restored member read-only until someone disarms it.
var AlarmBucket = []byte(schema.Alarm.Name())

// Alarm is one active etcd alarm.
type Alarm struct {
	// MemberID is the member that raised it, in etcd's hex form.
	MemberID string `json:"memberID"`
	// Type is NOSPACE or CORRUPT.
	Type string `json:"type"`
}

func (a Alarm) String() string { return a.Type + " (member " + a.MemberID + ")" }

// Alarms lists the active alarms the snapshot holds.
func (s *Snapshot) Alarms() ([]Alarm, error) {
	var out []Alarm
	err := s.ForEachInBucket(AlarmBucket, func(k, _ []byte) error {
		a, err := parseAlarm(k)
		if err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

func parseAlarm(k []byte) (Alarm, error) {
	var m etcdserverpb.AlarmMember
	if err := proto.Unmarshal(k, &m); err != nil {
		return Alarm{}, fmt.Errorf("alarm bucket: key %x is not an AlarmMember: %w", k, err)
	}
	return Alarm{MemberID: fmt.Sprintf("%x", m.MemberID), Type: m.Alarm.String()}, nil
}

// clearAlarms deletes every alarm of the bbolt database at path (a
// restored member's db, before it is published) and returns them.
func clearAlarms(path string) ([]Alarm, error) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, fmt.Errorf("clearing alarms in %s: %w", path, err)
	}
	var cleared []Alarm
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(AlarmBucket)
		if b == nil {
			return nil
		}
		var keys [][]byte
		if err := b.ForEach(func(k, _ []byte) error {
			a, err := parseAlarm(k)
			cleared = append(cleared, a)
			keys = append(keys, append([]byte(nil), k...))
			return err
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("clearing alarms in %s: %w", path, err)
	}
	return cleared, nil
}

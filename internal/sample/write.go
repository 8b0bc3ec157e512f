package sample

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// WriteResult reports what Write did.
type WriteResult struct {
	// Puts and Deletes count the writes (the compactor's puts included).
	Puts, Deletes int
	// CompactedAt is the revision the history compacted at.
	CompactedAt int64
	// CompactRevValue is the final value of CompactRevKey.
	CompactRevValue string
	// Revision is the store's revision after the last write.
	Revision int64
}

// Write applies Objects then History to a server, one request per write, as the apiserver would.
// Entries with a LeaseTTL share one lease per TTL. On a new server the revisions, and so the whole key
// bucket, are the same on every run.
func Write(ctx context.Context, srv *etcdtest.Server) (WriteResult, error) {
	var res WriteResult
	objects, history, err := objectsAndHistory()
	if err != nil {
		return res, err
	}
	cli := srv.Client()
	leases := map[int64]clientv3.LeaseID{}
	put := func(e Entry) error {
		var opts []clientv3.OpOption
		if e.LeaseTTL > 0 {
			id, ok := leases[e.LeaseTTL]
			if !ok {
				resp, err := cli.Grant(ctx, e.LeaseTTL)
				if err != nil {
					return fmt.Errorf("sample: grant a %ds lease for %s: %w", e.LeaseTTL, e.Key, err)
				}
				id = resp.ID
				leases[e.LeaseTTL] = id
			}
			opts = append(opts, clientv3.WithLease(id))
		}
		resp, err := cli.Put(ctx, e.Key, string(e.Value), opts...)
		if err != nil {
			return fmt.Errorf("sample: put %s: %w", e.Key, err)
		}
		res.Puts++
		res.Revision = resp.Header.Revision
		return nil
	}

	for _, e := range objects {
		if err := put(e); err != nil {
			return res, err
		}
	}
	var c compactor
	for _, op := range history {
		switch op.Type {
		case OpPut:
			if err := put(op.Entry); err != nil {
				return res, err
			}
		case OpDelete:
			rev, err := srv.Delete(ctx, op.Key)
			if err != nil {
				return res, fmt.Errorf("sample: %s: %w", op.Why, err)
			}
			res.Deletes++
			res.Revision = rev
		case OpCompact:
			if err := c.step(ctx, srv); err != nil {
				return res, err
			}
			res.Puts++
			res.Revision = c.rev
			if c.compactedAt != 0 {
				res.CompactedAt = c.compactedAt
			}
			res.CompactRevValue = c.value
		default:
			return res, fmt.Errorf("sample: unknown history operation %d", op.Type)
		}
	}
	return res, nil
}

// compactor replays kube-apiserver's compaction protocol (k8s.io/apiserver pkg/storage/etcd3/compact.go):
// if CompactRevKey's version is still the one seen last time, put the revision recorded last time and
// compact at it (nothing on the first round), then remember the new revision.
type compactor struct {
	version     int64 // CompactRevKey's version seen last round ("compact time")
	rev         int64 // store revision after the last round
	compactedAt int64
	value       string
}

func (c *compactor) step(ctx context.Context, srv *etcdtest.Server) error {
	value := strconv.FormatInt(c.rev, 10)
	resp, err := srv.Client().Txn(ctx).
		If(clientv3.Compare(clientv3.Version(CompactRevKey), "=", c.version)).
		Then(clientv3.OpPut(CompactRevKey, value)).
		Commit()
	if err != nil {
		return fmt.Errorf("sample: compactor round %d: %w", c.version+1, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("sample: compactor round %d: %s changed underneath", c.version+1, CompactRevKey)
	}
	c.version++
	c.value = value
	if c.rev != 0 {
		if err := srv.Compact(ctx, c.rev); err != nil {
			return err
		}
		c.compactedAt = c.rev
	}
	c.rev = resp.Header.Revision
	return nil
}

package transform

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
)

// ObjectChanges is the list of changed, deleted and created keys of a run,
// in the order the stream met them. A migration of a large cluster changes
// hundreds of thousands of objects (200k at etcd's 8 GiB ceiling, about
// 35 MB as Go values), so the list is kept encoded: in memory up to
// spillAt bytes, then in an unlinked 0600 file (beside the output, or in
// the temporary directory for a dry run; in memory when neither takes a
// file). Read it with Each, All or Slice; it marshals to a JSON array.
type ObjectChanges struct {
	n       int
	mem     []byte     // records after the spilled ones
	sets    [][]string // rule-name sets, by the index a record holds
	setIdx  map[string]int
	beside  string   // the spill file goes beside it; "" keeps everything in memory
	spillAt int      // bytes of mem that start (or continue) the spill
	f       *os.File // the spill file (unlinked), once there is one
	spilled int64    // bytes of records in f
	noSpill bool     // a spill file could not be created: stay in memory
	key     []byte   // scratch for set
}

// defaultSpillAt keeps a small run's list in memory (about 2,500 objects).
const defaultSpillAt = 256 << 10

// NewObjectChanges returns a list holding objs in memory.
func NewObjectChanges(objs ...ObjectChange) *ObjectChanges {
	l := &ObjectChanges{}
	for _, o := range objs {
		_ = l.Add(o) // in memory: cannot fail
	}
	return l
}

// Len is the number of objects.
func (l *ObjectChanges) Len() int {
	if l == nil {
		return 0
	}
	return l.n
}

// Add appends o.
func (l *ObjectChanges) Add(o ObjectChange) error {
	l.mem = binary.AppendUvarint(l.mem, uint64(len(o.Key)))
	l.mem = append(l.mem, o.Key...)
	l.mem = binary.AppendUvarint(l.mem, uint64(len(o.Action)))
	l.mem = append(l.mem, o.Action...)
	l.mem = binary.AppendUvarint(l.mem, uint64(l.set(o.Rules)))
	l.mem = binary.AppendUvarint(l.mem, uint64(len(o.Changes)))
	for _, c := range o.Changes {
		for _, s := range [3]string{c.Field, c.Old, c.New} {
			l.mem = binary.AppendUvarint(l.mem, uint64(len(s)))
			l.mem = append(l.mem, s...)
		}
	}
	l.n++
	if l.beside == "" || l.noSpill || len(l.mem) < l.spillAt {
		return nil
	}
	return l.spill()
}

// set returns the index of the rule-name set names, adding it.
func (l *ObjectChanges) set(names []string) int {
	l.key = l.key[:0]
	for _, n := range names {
		l.key = append(append(l.key, n...), 0)
	}
	if i, ok := l.setIdx[string(l.key)]; ok {
		return i
	}
	if l.setIdx == nil {
		l.setIdx = map[string]int{}
	}
	l.sets = append(l.sets, append([]string(nil), names...))
	l.setIdx[string(l.key)] = len(l.sets) - 1
	return len(l.sets) - 1
}

// spill moves the records in memory to the spill file.
func (l *ObjectChanges) spill() error {
	if l.f == nil {
		f, err := createUnlinked(l.beside)
		if err != nil {
			l.noSpill = true // a directory that takes no file: memory it is
			return nil
		}
		l.f = f
	}
	if _, err := l.f.WriteAt(l.mem, l.spilled); err != nil {
		return fmt.Errorf("writing the changed objects to temporary file %s: %w", l.f.Name(), err)
	}
	l.spilled += int64(len(l.mem))
	l.mem = l.mem[:0]
	return nil
}

// Close releases the spill file; the list is empty after it.
func (l *ObjectChanges) Close() error {
	if l == nil {
		return nil
	}
	var err error
	if l.f != nil {
		err = l.f.Close()
	}
	*l = ObjectChanges{}
	return err
}

// Each calls fn with every object in order, and stops at fn's first error.
func (l *ObjectChanges) Each(fn func(ObjectChange) error) error {
	if l == nil || l.n == 0 {
		return nil
	}
	var src io.Reader = bytes.NewReader(l.mem)
	if l.f != nil {
		src = io.MultiReader(io.NewSectionReader(l.f, 0, l.spilled), src)
	}
	r := bufio.NewReaderSize(src, 64<<10)
	for range l.n {
		o, err := l.read(r)
		if err != nil {
			name := "memory"
			if l.f != nil {
				name = "temporary file " + l.f.Name()
			}
			return fmt.Errorf("reading the changed objects from %s: %w", name, err)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// read decodes one record.
func (l *ObjectChanges) read(r *bufio.Reader) (ObjectChange, error) {
	var o ObjectChange
	str := func() (string, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", nil
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		return string(b), nil
	}
	var err error
	if o.Key, err = str(); err != nil {
		return o, err
	}
	if o.Action, err = str(); err != nil {
		return o, err
	}
	set, err := binary.ReadUvarint(r)
	if err != nil {
		return o, err
	}
	if set >= uint64(len(l.sets)) {
		return o, errors.New("a record names an unknown set of rules")
	}
	o.Rules = l.sets[set]
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return o, err
	}
	if n > 0 {
		o.Changes = make([]Change, n)
		for i := range o.Changes {
			c := &o.Changes[i]
			for _, s := range [3]*string{&c.Field, &c.Old, &c.New} {
				if *s, err = str(); err != nil {
					return o, err
				}
			}
		}
	}
	return o, nil
}

// All is every object in order. It panics if the spill file cannot be
// read, which Each returns as an error.
func (l *ObjectChanges) All() iter.Seq[ObjectChange] {
	return func(yield func(ObjectChange) bool) {
		stop := errors.New("stop")
		err := l.Each(func(o ObjectChange) error {
			if !yield(o) {
				return stop
			}
			return nil
		})
		if err != nil && err != stop {
			panic(err)
		}
	}
}

// Slice is every object in order, as one slice.
func (l *ObjectChanges) Slice() ([]ObjectChange, error) {
	out := make([]ObjectChange, 0, l.Len())
	err := l.Each(func(o ObjectChange) error {
		out = append(out, o)
		return nil
	})
	return out, err
}

// MarshalJSON writes the objects as a JSON array ([] when there are none).
func (l *ObjectChanges) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	first := true
	err := l.Each(func(o ObjectChange) error {
		if !first {
			b.WriteByte(',')
		}
		first = false
		j, err := json.Marshal(o)
		b.Write(j)
		return err
	})
	if err != nil {
		return nil, err
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON array of objects into memory.
func (l *ObjectChanges) UnmarshalJSON(b []byte) error {
	var objs []ObjectChange
	if err := json.Unmarshal(b, &objs); err != nil {
		return err
	}
	_ = l.Close()
	*l = ObjectChanges{}
	for _, o := range objs {
		_ = l.Add(o)
	}
	return nil
}

// String lists up to 20 objects, for messages and test failures.
func (l *ObjectChanges) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d objects", l.Len())
	i := 0
	_ = l.Each(func(o ObjectChange) error {
		if i == 20 {
			b.WriteString(" ...")
			return errors.New("enough")
		}
		i++
		fmt.Fprintf(&b, " %s %s %v", o.Action, o.Key, o.Changes)
		return nil
	})
	return b.String()
}

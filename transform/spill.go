package transform

import (
	"bufio"
	"fmt"
	"os"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// spill holds the bytes of changed and created objects between the stream,
// which meets them in revision order, and the end, where they are written
// above every input revision. A migration of a large cluster changes tens
// of thousands of objects; keeping them in memory would make memory grow
// with the cluster. The file sits beside the output (the operator chose
// that disk), is private (0600: a changed Secret may be in it), and is
// unlinked as soon as it is open, so nothing is left behind even if the
// process is killed.
type spill struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	name string
}

func newSpill(beside string) (*spill, error) {
	f, err := createUnlinked(beside)
	if err != nil {
		return nil, err
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 1<<20), name: f.Name()}, nil
}

// createUnlinked creates a 0600 temporary file beside path, under a name
// the next run knows as a leftover, and unlinks it at once: nothing is
// left of it once it is closed, even after a kill.
func createUnlinked(beside string) (*os.File, error) {
	f, err := fsutil.CreateTemp(beside, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating a temporary file beside %s: %w", beside, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("creating a temporary file beside %s: %w", beside, err)
	}
	return f, nil
}

// add stores b and returns where it is.
func (s *spill) add(b []byte) (int64, error) {
	off := s.size
	if _, err := s.w.Write(b); err != nil {
		return 0, fmt.Errorf("writing temporary file %s: %w", s.name, err)
	}
	s.size += int64(len(b))
	return off, nil
}

// read returns a copy of n bytes at off. The first read flushes.
func (s *spill) read(off int64, n int) ([]byte, error) {
	if s.w.Buffered() > 0 {
		if err := s.w.Flush(); err != nil {
			return nil, fmt.Errorf("writing temporary file %s: %w", s.name, err)
		}
	}
	b := make([]byte, n)
	if _, err := s.f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("reading temporary file %s: %w", s.name, err)
	}
	return b, nil
}

func (s *spill) close() {
	if s != nil && s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

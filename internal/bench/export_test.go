package bench

// NewMemoryCgroups, Create and Remove are newMemoryCgroups and its methods, for the package's external tests.
func NewMemoryCgroups(limit int64) (*memoryCgroups, error) { return newMemoryCgroups(limit) }

// Create makes a fresh cgroup with the limit.
func (m *memoryCgroups) Create() (string, error) { return m.create() }

// Remove removes a cgroup made by Create.
func (m *memoryCgroups) Remove(dir string) error { return m.remove(dir) }

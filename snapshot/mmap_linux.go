package snapshot

import "syscall"

// mmapPopulate maps a file's pages in one go (see Open).
const mmapPopulate = syscall.MAP_POPULATE

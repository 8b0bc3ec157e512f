// Command snapshift rewrites Kubernetes cluster state offline, in etcd
// snapshot files. See `snapshift --help`.
package main

import (
	"os"

	"github.com/snapshift/snapshift/cmd/snapshift/app"
)

func main() {
	os.Exit(app.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

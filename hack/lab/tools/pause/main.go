// Command pause is the lab's pod sandbox image: it sleeps until SIGINT or
// SIGTERM and exits 0, as registry.k8s.io/pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
}

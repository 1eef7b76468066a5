// Command pause is the local cluster's pod sandbox image: it holds the pod's
// namespaces and does nothing else until the runtime stops it. There is no
// registry to pull registry.k8s.io/pause from, so it is built from source.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

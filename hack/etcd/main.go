// Command etcd is etcd's own server entry point, built from the Go module
// proxy so that tests get an etcd new enough for kube-apiserver 1.36 without
// downloading release binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

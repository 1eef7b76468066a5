// Command listener-operator is the one binary of the operator: the manager
// (reconcilers and admission webhooks), the CSI driver, and tools, chosen by
// subcommand.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	os.Exit(run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}

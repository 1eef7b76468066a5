// Command cert-manager-controller is cert-manager's controller as the e2e
// cluster runs it: the certificates controllers, the approver, and the CA
// and self-signed issuers, built from the released module
// github.com/cert-manager/cert-manager (the version pinned in ../go.mod,
// equal to the API types the operator uses: `make verify`).
//
// Only the issuers the project tests are linked in. ACME, Vault and Venafi
// are the user's own cert-manager: the ACME DNS solvers import SDKs the Go
// module proxy refuses, and no test here would use them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"k8s.io/klog/v2"

	// Each blank import registers its controllers with controller.Known().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (empty: the pod's service account)")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager", "namespace of the Secrets that ClusterIssuers read")
	workers := flag.Int("workers", 5, "workers per controller")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, klog.Background())
	if err := run(ctx, *kubeconfig, *clusterNS, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterNS string, workers int) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: clusterNS},
		// cert-manager's own defaults for a failed request's back-off.
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(controller.Known()))
	for name := range controller.Known() {
		names = append(names, name)
	}
	sort.Strings(names)

	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, name := range names {
		c, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(workers, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", name, err)
			}
		}()
	}
	// The constructors only registered informers: nothing is listed or
	// watched, so nothing is processed, until the factories start.
	shared, err := factory.Build("informers")
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	klog.Infof("cert-manager-controller: running %d controllers: %v", len(names), names)

	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	wg.Wait()
	return nil
}

// Command cert-manager-cainjector is cert-manager's cainjector as the e2e
// cluster runs it: it writes the CA of a Certificate's Secret into the
// caBundle of the webhook configurations that name it
// (cert-manager.io/inject-ca-from), built from the released module
// github.com/cert-manager/cert-manager (hack/certmanager/go.mod).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	cmscheme "github.com/cert-manager/cert-manager/pkg/api"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(klog.Background())
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-cainjector:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// The user agent's first word is the field manager of what cainjector
	// applies; empty, every apply is refused ("fieldManager: Required value").
	cfg.UserAgent = "cert-manager-cainjector/v1.21.2"
	// cert-manager's own scheme has only its kinds; the injectors also read
	// Secrets and write webhook configurations (and CRDs, not enabled here).
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, cmscheme.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Secrets are watched by their metadata only; their data is read
		// when injected, not cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			"mutatingwebhookconfiguration":   true,
			"validatingwebhookconfiguration": true,
		},
	})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

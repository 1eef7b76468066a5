package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listener-operator/listener-operator/reconcile"
)

// resolveClusterDomain completes the reconcilers' cluster domain (flag,
// env, the kubelet's configuration if asked, resolv.conf, cluster.local)
// and logs where it came from.
func resolveClusterDomain(ctx context.Context, o *reconcile.Options, cfg *rest.Config, log logr.Logger) error {
	src := reconcile.ClusterDomainSources{ResolvConf: func() ([]byte, error) { return os.ReadFile("/etc/resolv.conf") }}
	if o.ClusterDomainFromKubelet && o.ClusterDomain == "" {
		node := os.Getenv("KUBERNETES_NODE_NAME")
		if node == "" {
			return fmt.Errorf("--cluster-domain-from-kubelet needs the operator's node name in KUBERNETES_NODE_NAME (downward API spec.nodeName)")
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("client for the kubelet's configuration: %w", err)
		}
		src.Kubelet = func(ctx context.Context) ([]byte, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
		}
	}
	from, warning := o.ResolveClusterDomain(ctx, src)
	if warning != nil {
		log.Info("cluster domain: a source told nothing", "reason", warning.Error())
	}
	log.Info("cluster domain", "domain", o.ClusterDomain, "from", from)
	return nil
}
